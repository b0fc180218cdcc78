import { canonicalize } from '../../../client/src/canonical-json.js'
import { allInclusionProofs, leafHashOfText, rootFromLeafHashes } from './merkle.js'
import type { IngestRecord } from './validation.js'

/**
 * What a record contributes to its batch's Merkle tree (as UTF-8): RFC 8785 JSON of exactly the five spec fields.
 * The four string fields are written in their canonical key order directly; only the body needs the general walk.
 */
export function recordLeafText(record: IngestRecord): string {
  return `{"body":${canonicalize(record.body)},"id":${JSON.stringify(record.id)},"policy_class":${JSON.stringify(record.policy_class)},"source":${JSON.stringify(record.source)},"ts":${JSON.stringify(record.ts)}}`
}

export interface BatchLineage {
  /** Lowercase hex of each accepted record's leaf hash, in batch order. */
  leafHashes: string[]
  /** Lowercase hex MTH of the batch (SHA-256 of the empty string when nothing was accepted). */
  root: string
}

export function batchLineage(records: readonly IngestRecord[]): BatchLineage {
  const leaves = records.map((r) => leafHashOfText(recordLeafText(r)))
  return {
    leafHashes: leaves.map((l) => l.toString('hex')),
    root: rootFromLeafHashes(leaves).toString('hex'),
  }
}

/** Every leaf's audit path of one batch (hex in, hex out), in leaf order. */
export function proofsFromLeafHashes(leafHashes: readonly string[]): string[][] {
  return allInclusionProofs(leafHashes.map((h) => Buffer.from(h, 'hex'))).map((path) =>
    path.map((p) => p.toString('hex')),
  )
}
