import { canonicalize } from '../canonical-json.js'
import { allInclusionProofs, inclusionProof, leafHash, rootFromLeafHashes } from './merkle.js'
import type { IngestRecord } from './validation.js'

/** The bytes a record contributes to its batch's Merkle tree: RFC 8785 JSON of exactly the five spec fields. */
export function recordLeafData(record: IngestRecord): Buffer {
  const { id, ts, source, policy_class, body } = record
  return Buffer.from(canonicalize({ id, ts, source, policy_class, body }), 'utf8')
}

export interface BatchLineage {
  /** Lowercase hex of each accepted record's leaf hash, in batch order. */
  leafHashes: string[]
  /** Lowercase hex MTH of the batch (SHA-256 of the empty string when nothing was accepted). */
  root: string
}

export function batchLineage(records: readonly IngestRecord[]): BatchLineage {
  const leaves = records.map((r) => leafHash(recordLeafData(r)))
  return {
    leafHashes: leaves.map((l) => l.toString('hex')),
    root: rootFromLeafHashes(leaves).toString('hex'),
  }
}

/** The audit path of leaf `index` given every leaf hash of its batch (hex in, hex out). */
export function proofFromLeafHashes(leafHashes: readonly string[], index: number): string[] {
  return inclusionProof(
    leafHashes.map((h) => Buffer.from(h, 'hex')),
    index,
  ).map((p) => p.toString('hex'))
}

/** Every leaf's audit path of one batch (hex in, hex out), in leaf order. */
export function proofsFromLeafHashes(leafHashes: readonly string[]): string[][] {
  return allInclusionProofs(leafHashes.map((h) => Buffer.from(h, 'hex'))).map((path) =>
    path.map((p) => p.toString('hex')),
  )
}
