/**
 * An independent RFC 6962 §2.1 Merkle Tree Hash, written straight from the RFC's recursive definition: the oracle the
 * ingestion tests check the server's lineage against (nothing here comes from src/).
 */
import { createHash } from 'node:crypto'

export const sha256 = (...parts: Buffer[]): Buffer =>
  createHash('sha256').update(Buffer.concat(parts)).digest()

/** MTH(D[n]) over the leaves' data (each leaf hashed as SHA-256(0x00 || d), each node as SHA-256(0x01 || l || r)). */
export function merkleTreeHash(d: Buffer[]): Buffer {
  if (d.length === 0) return sha256()
  if (d.length === 1) return sha256(Buffer.from([0]), d[0] as Buffer)
  let k = 1
  while (k * 2 < d.length) k *= 2
  return sha256(Buffer.from([1]), merkleTreeHash(d.slice(0, k)), merkleTreeHash(d.slice(k)))
}
