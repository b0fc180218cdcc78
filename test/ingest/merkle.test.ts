import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { canonicalize } from '../../client/src/canonical-json.js'
import {
  inclusionProof,
  leafHash,
  merkleRoot,
  proofFromLeafHashes,
  verifyInclusion,
} from '../../src/domain/ingestion/audit.js'
import { batchLineage } from '../../src/domain/ingestion/lineage.js'
import { allInclusionProofs } from '../../src/domain/ingestion/merkle.js'
import { merkleTreeHash as mth, sha256 as sha } from '../support/rfc6962.js'

// An independent RFC 6962 §2.1 Merkle Tree Hash, written straight from the RFC's recursive definition.

const data = (n: number) => Array.from({ length: n }, (_, i) => Buffer.from(`leaf-${i}`))

describe('RFC 6962 Merkle tree hash', () => {
  it('matches the well-known vectors for the empty tree and the empty leaf', () => {
    expect(merkleRoot([]).toString('hex')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    )
    expect(merkleRoot([Buffer.alloc(0)]).toString('hex')).toBe(
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    )
  })

  it('equals the independent implementation for every size from 0 to 70', () => {
    for (let n = 0; n <= 70; n++) expect(merkleRoot(data(n)).equals(mth(data(n)))).toBe(true)
  })

  it('depends on the order of the leaves', () => {
    const d = data(5)
    expect(merkleRoot(d).equals(merkleRoot([...d].reverse()))).toBe(false)
  })

  it('equals the independent implementation on arbitrary leaf data', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 40 }), (arrays) => {
        const d = arrays.map((a) => Buffer.from(a))
        return merkleRoot(d).equals(mth(d))
      }),
    )
  })
})

describe('inclusion proofs', () => {
  it('verify for every leaf of trees of 1 to 33 leaves', () => {
    for (let n = 1; n <= 33; n++) {
      const leaves = data(n).map(leafHash)
      const root = mth(data(n))
      for (let i = 0; i < n; i++) {
        const proof = inclusionProof(leaves, i)
        expect(verifyInclusion(leaves[i] as Buffer, i, n, proof, root)).toBe(true)
      }
    }
  })

  it('have the RFC 6962 path length (0 for one leaf, ceil(log2 n) at most)', () => {
    expect(inclusionProof([leafHash(Buffer.from('x'))], 0)).toEqual([])
    const leaves = data(8).map(leafHash)
    expect(inclusionProof(leaves, 3)).toHaveLength(3)
    // In a tree of 5, the last leaf hangs right under the root: its path is the left subtree's root only.
    const five = data(5).map(leafHash)
    expect(inclusionProof(five, 4)).toEqual([mth(data(4))])
  })

  it('fail for a wrong leaf, index, size, root or a tampered path', () => {
    const n = 11
    const leaves = data(n).map(leafHash)
    const root = mth(data(n))
    const proof = inclusionProof(leaves, 6)
    const leaf = leaves[6] as Buffer
    expect(verifyInclusion(leaf, 6, n, proof, root)).toBe(true)
    expect(verifyInclusion(leaves[5] as Buffer, 6, n, proof, root)).toBe(false)
    expect(verifyInclusion(leaf, 5, n, proof, root)).toBe(false)
    // A size that changes the path's shape (leaf 6 would be the last of 7) must not verify.
    expect(verifyInclusion(leaf, 6, 7, proof, root)).toBe(false)
    expect(verifyInclusion(leaf, 6, n, proof, sha(Buffer.from('other')))).toBe(false)
    const tampered = proof.map((p, i) => (i === 1 ? sha(p) : p))
    expect(verifyInclusion(leaf, 6, n, tampered, root)).toBe(false)
    expect(verifyInclusion(leaf, 6, n, proof.slice(0, -1), root)).toBe(false)
    expect(verifyInclusion(leaf, 6, n, [...proof, root], root)).toBe(false)
    expect(verifyInclusion(leaf, 11, n, proof, root)).toBe(false)
  })

  it('are the same when computed for every leaf at once', () => {
    expect(allInclusionProofs([])).toEqual([])
    for (let n = 1; n <= 40; n++) {
      const leaves = data(n).map(leafHash)
      const all = allInclusionProofs(leaves)
      for (let i = 0; i < n; i++) expect(all[i]).toEqual(inclusionProof(leaves, i))
    }
  })

  it('refuse an index outside the tree', () => {
    expect(() => inclusionProof(data(3).map(leafHash), 3)).toThrow(RangeError)
  })
})

describe('the worked example of docs/ingestion.md', () => {
  it('produces the documented leaves, root and proof', () => {
    const records = [
      {
        id: 'r1',
        ts: '2026-11-23T06:00:00Z',
        source: 'crm',
        policy_class: 'public',
        body: { currency: 'EUR', amount: 10 },
      },
      {
        id: 'r2',
        ts: '2026-11-23T06:00:01.5+01:00',
        source: 'crm',
        policy_class: 'internal',
        body: { tags: ['a', 'b'], note: 'café' },
      },
      { id: 'r3', ts: '2026-11-23T06:00:02Z', source: 'erp', policy_class: 'public', body: {} },
    ]
    const lineage = batchLineage(records)
    expect(lineage.leafHashes).toEqual([
      'f3484adafe75aa087f295b1f3f9a1dc2dc6d6e545ed8062adafe6717551ffbc9',
      '1effc16e73efbdf925f75a263886d32de572a38feea1a2c597ac92d2c20f2587',
      'bc7f10d104bff9b792916d0c79252f010d654a190c7379d2e653445e78a6cf5f',
    ])
    expect(lineage.root).toBe('0715cb47eb28760a8755311665208b4ba1259f238d7b3d460941befecfb0f981')
    expect(proofFromLeafHashes(lineage.leafHashes, 2)).toEqual([
      '96aab0f127f87b313fe9feb6e9b279e088cad9ce25ea5fefc2088d4b69bd872e',
    ])
  })
})

describe('batch lineage', () => {
  // The batch path writes the five fields' canonical JSON directly and hashes the text in one call; this ties it
  // to the definition: the leaf is SHA-256(0x00 || RFC 8785 JSON of the record) and the root the RFC 6962 MTH.
  it('equals the MTH of the canonical JSON of each record, for arbitrary records', () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 })
    const record = fc.record({
      id: text,
      ts: text,
      source: text,
      policy_class: text,
      body: fc.dictionary(text, fc.jsonValue({ maxDepth: 3 })) as fc.Arbitrary<Record<string, unknown>>,
    })
    fc.assert(
      fc.property(fc.array(record, { maxLength: 12 }), (records) => {
        const data = records.map((r) => Buffer.from(canonicalize(r), 'utf8'))
        const lineage = batchLineage(records)
        expect(lineage.leafHashes).toEqual(data.map((d) => sha(Buffer.from([0]), d).toString('hex')))
        expect(lineage.root).toBe(mth(data).toString('hex'))
      }),
    )
  })
})
