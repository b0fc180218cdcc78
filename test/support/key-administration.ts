import { type Clock, systemClock } from '../../src/domain/clock.js'
import { KeyAdministration } from '../../src/domain/keys/administration.js'
import type { KeyService } from '../../src/domain/keys/service.js'
import type { Db } from '../../src/domain/ports.js'
import { KeyRepo } from '../../src/store/repos/keys.js'
import { WorkspaceRepo } from '../../src/store/repos/workspaces.js'

/** The KeyAdministration beside a KeyService built by a test, wired to its cache and key watch as services.ts does. */
export function administrationOf(keys: KeyService, db: Db, clock: Clock = systemClock): KeyAdministration {
  return new KeyAdministration(
    new KeyRepo(db),
    new WorkspaceRepo(db),
    clock,
    undefined,
    keys.cache,
    keys.watch,
  )
}
