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
  | 'req'
  | 'res'
  | 'batch'

// Random bytes drawn in blocks: one CSPRNG call per 256 ids instead of one per id (ids are made on every request).
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

function randomDigits(): number[] {
  if (poolOffset + 16 > pool.length) {
    randomFillSync(pool)
    poolOffset = 0
  }
  const digits = new Array<number>(16)
  for (let i = 0; i < 16; i++) digits[i] = (pool[poolOffset + i] ?? 0) & 31
  poolOffset += 16
  return digits
}

let lastTime = 0
let lastRandom: number[] = []

/**
 * Time-ordered ids (ULID layout: 10 chars of milliseconds, 16 random chars) so that ids sort in creation
 * order even within one millisecond; the random tail makes them unguessable across workspaces.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  let random: number[]
  if (now <= lastTime && lastRandom.length === 16) {
    random = increment(lastRandom)
  } else {
    random = randomDigits()
    lastTime = now
  }
  lastRandom = random
  let time = ''
  let t = Math.max(0, Math.floor(now))
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time
    t = Math.floor(t / 32)
  }
  return `${prefix}_${time}${random.map((n) => ALPHABET[n]).join('')}`
}

function increment(digits: number[]): number[] {
  const next = [...digits]
  for (let i = next.length - 1; i >= 0; i--) {
    if ((next[i] ?? 0) < 31) {
      next[i] = (next[i] ?? 0) + 1
      return next
    }
    next[i] = 0
  }
  return randomDigits()
}
