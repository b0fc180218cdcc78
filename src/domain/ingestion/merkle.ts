import { hash } from 'node:crypto'

/**
 * RFC 6962 §2.1 Merkle Tree Hash over SHA-256 (the Certificate Transparency tree, also RFC 9162 §2.1.1), as the
 * server computes it: leaves and interior nodes are hashed with different one-byte prefixes (0x00 / 0x01) so that a
 * leaf can never be passed off as an interior node (second-preimage resistance). Hashes are raw 32-byte Buffers;
 * callers render hex. The one-leaf-at-a-time forms (a single audit path, its verification) are in audit.ts.
 */

/** MTH of the empty tree: SHA-256 of no bytes. */
const EMPTY_TREE = hash('sha256', '', 'buffer')

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

/** SHA-256(0x01 || left || right) of two 32-byte hashes (every node of a tree of SHA-256 leaves). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  NODE_INPUT.set(left, 1)
  NODE_INPUT.set(right, 33)
  return hash('sha256', NODE_INPUT, 'buffer')
}

/** The largest power of two strictly smaller than n (n ≥ 2): where RFC 6962 splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1
  while (k * 2 < n) k *= 2
  return k
}

/** MTH over already computed leaf hashes; the empty tree hashes to SHA-256 of the empty string. */
export function rootFromLeafHashes(leaves: readonly Uint8Array[]): Buffer {
  if (leaves.length === 0) return Buffer.from(EMPTY_TREE)
  return subtreeRoot(leaves, 0, leaves.length)
}

/** MTH of the leaves [start, end) (at least one). */
export function subtreeRoot(leaves: readonly Uint8Array[], start: number, end: number): Buffer {
  const n = end - start
  if (n === 1) return Buffer.from(leaves[start] as Uint8Array)
  const k = splitPoint(n)
  return nodeHash(subtreeRoot(leaves, start, start + k), subtreeRoot(leaves, start + k, end))
}

/**
 * Every leaf's audit path at once (the paths RFC 6962 §2.1.1 defines, one per leaf), hashing each interior node
 * once: O(n) hashes instead of O(n) per leaf, which matters when a 500-record batch is presented or streamed.
 */
export function allInclusionProofs(leaves: readonly Uint8Array[]): Buffer[][] {
  const proofs: Buffer[][] = leaves.map(() => [])
  const build = (start: number, end: number): Buffer => {
    if (end - start === 1) return Buffer.from(leaves[start] as Uint8Array)
    const mid = start + splitPoint(end - start)
    const left = build(start, mid)
    const right = build(mid, end)
    // Children are built first, so each leaf's siblings are appended from the bottom of the tree up.
    // Stryker disable next-line OptionalChaining: i stays within the leaves, so every proof exists
    for (let i = start; i < mid; i++) proofs[i]?.push(right)
    // Stryker disable next-line OptionalChaining: i stays within the leaves, so every proof exists
    for (let i = mid; i < end; i++) proofs[i]?.push(left)
    return nodeHash(left, right)
  }
  // Stryker disable next-line ConditionalExpression,EqualityOperator: the server asks only for stored batches, none empty
  if (leaves.length > 0) build(0, leaves.length)
  return proofs
}
