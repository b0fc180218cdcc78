import { createHash, hash } from 'node:crypto'

/**
 * RFC 6962 §2.1 Merkle Tree Hash over SHA-256 (the Certificate Transparency tree, also RFC 9162 §2.1.1).
 * Leaves and interior nodes are hashed with different one-byte prefixes (0x00 / 0x01) so that a leaf can never be
 * passed off as an interior node (second-preimage resistance). Hashes are raw 32-byte Buffers; callers render hex.
 */
const LEAF_PREFIX = Buffer.from([0x00])
const NODE_PREFIX = Buffer.from([0x01])

export function sha256(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest()
}

export function leafHash(data: Uint8Array): Buffer {
  return sha256(LEAF_PREFIX, data)
}

/**
 * The leaf hash of a text's UTF-8 bytes. U+0000 encodes as the single byte 0x00, so prefixing the text with it
 * hashes exactly 0x00 || UTF-8(text) in one call: a batch hashes hundreds of leaves, and a Hash object per leaf
 * cost more than the hashing.
 */
export function leafHashOfText(text: string): Buffer {
  return hash('sha256', `\u0000${text}`, 'buffer')
}

/** Interior nodes are always two 32-byte hashes in a tree: one reused 65-byte buffer, one hash call. */
const NODE_INPUT = Buffer.alloc(65)
NODE_INPUT[0] = 0x01

export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  if (left.length !== 32 || right.length !== 32) return sha256(NODE_PREFIX, left, right)
  NODE_INPUT.set(left, 1)
  NODE_INPUT.set(right, 33)
  return hash('sha256', NODE_INPUT, 'buffer')
}

/** The largest power of two strictly smaller than n (n ≥ 2): where RFC 6962 splits a tree of n leaves. */
function splitPoint(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** MTH over already computed leaf hashes; the empty tree hashes to SHA-256 of the empty string. */
export function rootFromLeafHashes(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return sha256()
  return subtreeRoot(leaves, 0, leaves.length)
}

function subtreeRoot(leaves: readonly Uint8Array[], start: number, end: number): Buffer {
  const n = end - start
  if (n === 1) return Buffer.from(leaves[start] as Uint8Array)
  const k = splitPoint(n)
  return nodeHash(subtreeRoot(leaves, start, start + k), subtreeRoot(leaves, start + k, end))
}

/** MTH(D[n]) over the leaf data itself. */
export function merkleRoot(data: readonly Uint8Array[]): Buffer {
  return rootFromLeafHashes(data.map(leafHash))
}

/** RFC 6962 §2.1.1 audit path PATH(m, D[n]) over leaf hashes: sibling hashes from the leaf up to the root. */
export function inclusionProof(leaves: readonly Uint8Array[], index: number): Buffer[] {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) {
    throw new RangeError(`leaf index ${index} is outside a tree of ${leaves.length} leaves`)
  }
  return path(leaves, index, 0, leaves.length)
}

function path(leaves: readonly Uint8Array[], m: number, start: number, end: number): Buffer[] {
  const n = end - start
  if (n <= 1) return []
  const k = splitPoint(n)
  if (m < k) return [...path(leaves, m, start, start + k), subtreeRoot(leaves, start + k, end)]
  return [...path(leaves, m - k, start + k, end), subtreeRoot(leaves, start, start + k)]
}

/**
 * Every leaf's audit path at once (same paths as `inclusionProof`), hashing each interior node once: O(n) hashes
 * instead of O(n) per leaf, which matters when a 500-record batch is presented or streamed.
 */
export function allInclusionProofs(leaves: readonly Uint8Array[]): Buffer[][] {
  const proofs: Buffer[][] = leaves.map(() => [])
  const build = (start: number, end: number): Buffer => {
    if (end - start === 1) return Buffer.from(leaves[start] as Uint8Array)
    const mid = start + splitPoint(end - start)
    const left = build(start, mid)
    const right = build(mid, end)
    // Children are built first, so each leaf's siblings are appended from the bottom of the tree up.
    for (let i = start; i < mid; i++) proofs[i]?.push(right)
    for (let i = mid; i < end; i++) proofs[i]?.push(left)
    return nodeHash(left, right)
  }
  if (leaves.length > 0) build(0, leaves.length)
  return proofs
}

/** RFC 9162 §2.1.3.2: does `proof` take the leaf hash at `index` of a tree of `size` leaves up to `root`? */
export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): boolean {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) return false
  let fn = index
  let sn = size - 1
  let r: Buffer = Buffer.from(leaf)
  for (const p of proof) {
    if (sn === 0) return false
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2)
          sn = Math.floor(sn / 2)
        }
      }
    } else {
      r = nodeHash(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 && r.equals(Buffer.from(root))
}
