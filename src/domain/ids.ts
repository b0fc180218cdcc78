import { randomFillSync } from 'node:crypto'

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz' // Crockford base32, lower case

export type IdPrefix =
  | 'ws'
  | 'key'
  | 'agt'
  | 'task'
  | 'tool'
  | 'run'
  | 'evt'
  | 'whk'
  | 'dlv'
  | 'dst'
  | 'req'
  | 'res'
  | 'batch'

// Random bytes drawn in blocks: one CSPRNG call per 256 ids instead of one per id (ids are made on every request).
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

/** The random tail of the last id, as base32 digits, changed in place. */
const tail = new Uint8Array(16)
// The tail's characters are made in one string allocation rather than sixteen concatenations.
const ALPHABET_CODES = Array.from(ALPHABET, (ch) => ch.charCodeAt(0))
const tailCodes: number[] = new Array(16).fill(0)
let tailSet = false

function drawTail(): void {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  for (let i = 0; i < 16; i++) tail[i] = (pool[poolOffset + i] as number) & 31
  poolOffset += 16
  tailSet = true
}

/** The tail plus one, as a 16-digit base32 number; a fresh draw when it overflows. */
function incrementTail(): void {
  for (let i = 15; i >= 0; i--) {
    if ((tail[i] as number) < 31) {
      tail[i] = (tail[i] as number) + 1
      return
    }
    tail[i] = 0
  }
  drawTail()
}

let lastTime = 0
// The time part is the same for every id of one millisecond: encoded once per millisecond (a request id per request).
let encodedTime = -1
let encodedTimeText = ''

function timeText(now: number): string {
  if (now !== encodedTime) {
    let text = ''
    let t = Math.max(0, Math.floor(now))
    for (let i = 0; i < 10; i++) {
      text = ALPHABET[t % 32] + text
      t = Math.floor(t / 32)
    }
    encodedTime = now
    encodedTimeText = text
  }
  return encodedTimeText
}

/**
 * Time-ordered ids (ULID layout: 10 chars of milliseconds, 16 random chars) so that ids sort in creation
 * order even within one millisecond; the random tail makes them unguessable across workspaces.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now <= lastTime && tailSet) {
    incrementTail()
  } else {
    drawTail()
    lastTime = now
  }
  for (let i = 0; i < 16; i++) tailCodes[i] = ALPHABET_CODES[tail[i] as number] as number
  return `${prefix}_${timeText(now)}${String.fromCharCode.apply(null, tailCodes)}`
}
