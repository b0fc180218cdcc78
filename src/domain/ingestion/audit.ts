import { createHash } from 'node:crypto'
import { splitPoint, subtreeRoot } from './merkle.js'

/**
 * What an auditor does with a record's lineage, one leaf at a time: hash leaf data, recompute a root, take one
 * leaf's audit path, verify a path against a root (RFC 6962 §2.1, RFC 9162 §2.1.3.2). The server never runs these:
 * it hashes leaf texts and builds every path of a batch at once (merkle.ts, lineage.ts); the tests check those
 * against these one-leaf forms, and they are outside the mutation run (conformance/stryker/scope.mjs).
 */

export function sha256(...parts: Uint8Array[]): Buffer {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest()
}

export function leafHash(data: Uint8Array): Buffer {
  return sha256(Buffer.from([0x00]), data)
}

/** SHA-256(0x01 || left || right), for inputs of any length (a path under audit may carry anything). */
function nodeOf(left: Uint8Array, right: Uint8Array): Buffer {
  return sha256(Buffer.from([0x01]), left, right)
}

/** MTH(D[n]) over the leaf data itself. */
export function merkleRoot(data: readonly Uint8Array[]): Buffer {
  if (data.length === 0) return sha256()
  return subtreeRoot(data.map(leafHash), 0, data.length)
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

/** The audit path of leaf `index` given every leaf hash of its batch (hex in, hex out). */
export function proofFromLeafHashes(leafHashes: readonly string[], index: number): string[] {
  return inclusionProof(
    leafHashes.map((h) => Buffer.from(h, 'hex')),
    index,
  ).map((p) => p.toString('hex'))
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
      r = nodeOf(p, r)
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2)
          sn = Math.floor(sn / 2)
        }
      }
    } else {
      r = nodeOf(r, p)
    }
    fn = Math.floor(fn / 2)
    sn = Math.floor(sn / 2)
  }
  return sn === 0 && r.equals(Buffer.from(root))
}
