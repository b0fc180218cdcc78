import type { SeenSignatures } from '../../domain/destinations/ports.js'
import type { Queryable } from '../../domain/ports.js'

/**
 * Slack click signatures seen within a window, in the store every replica shares (table `slack_signatures_seen`):
 * the insert that finds the signature already there is the replay, whichever replica first saw the click.
 */
export class SlackSignatureRepo implements SeenSignatures {
  constructor(private readonly db: Queryable) {}

  async firstSeen(signature: string, now: number, windowMs: number): Promise<boolean> {
    await this.db.run('DELETE FROM slack_signatures_seen WHERE seen_at < $1', [now - windowMs])
    const added = await this.db.run(
      'INSERT INTO slack_signatures_seen (signature, seen_at) VALUES ($1, $2) ON CONFLICT (signature) DO NOTHING',
      [signature, now],
    )
    return added === 1
  }
}
