import type { ApiKeyRecord } from '../../domain/identity.js'
import type { KeyRepository } from '../../domain/keys/ports.js'
import { fromJson, type Queryable, toJson } from '../db.js'

interface KeyRow extends Record<string, unknown> {
  id: string
  workspace_id: string
  identity: string
  scopes: string
  secret_hash: string
  created_at: number
  expires_at: number | null
  revoked_at: number | null
}

function toKey(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    identity: row.identity,
    scopes: fromJson<string[]>(row.scopes),
    secretHash: row.secret_hash,
    createdAt: Number(row.created_at),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  }
}

export class KeyRepo implements KeyRepository {
  constructor(private readonly db: Queryable) {}

  /** The same repository inside a transaction that spans several repositories. */
  in(tx: Queryable): KeyRepo {
    return new KeyRepo(tx)
  }

  async insert(key: ApiKeyRecord): Promise<void> {
    await this.db.run(
      `INSERT INTO api_keys (id, workspace_id, identity, scopes, secret_hash, created_at, expires_at, revoked_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        key.id,
        key.workspaceId,
        key.identity,
        toJson(key.scopes),
        key.secretHash,
        key.createdAt,
        key.expiresAt,
        key.revokedAt,
      ],
    )
  }

  async byId(id: string): Promise<ApiKeyRecord | undefined> {
    const row = await this.db.one<KeyRow>('SELECT * FROM api_keys WHERE id = $1', [id])
    return row ? toKey(row) : undefined
  }

  async listByWorkspace(workspaceId: string): Promise<ApiKeyRecord[]> {
    const rows = await this.db.query<KeyRow>('SELECT * FROM api_keys WHERE workspace_id = $1 ORDER BY seq', [
      workspaceId,
    ])
    return rows.map(toKey)
  }

  async revoke(id: string, at: number): Promise<boolean> {
    return (
      (await this.db.run('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [
        id,
        at,
      ])) > 0
    )
  }
}
