/**
 * The contract's text as JSON: a YAML text is parsed once per content and its JSON kept under the text's digest, so
 * a later run reads JSON; a kept copy that cannot be read (cut short, damaged) is parsed again, never trusted.
 */

import { randomUUID } from 'node:crypto'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { keptParse, parseDocument } from '../src/contract.js'

const yamlText = () =>
  `openapi: 3.1.0\ninfo:\n  title: t-${randomUUID()}\n  version: '1'\npaths:\n  /a:\n    get:\n      responses:\n        '200': {description: ok}\n`

describe('parseDocument', () => {
  it('keeps a YAML text’s parse under its digest and reads it back', () => {
    const text = yamlText()
    const kept = keptParse(text)
    try {
      expect(parseDocument(text)).toEqual(parse(text))
      expect(JSON.parse(readFileSync(kept, 'utf8'))).toEqual(parse(text))
      // Read back from the kept JSON: what is there is what the parse gives.
      writeFileSync(kept, JSON.stringify({ ...parse(text), kept: true }))
      expect(parseDocument(text)).toEqual({ ...parse(text), kept: true })
    } finally {
      rmSync(kept, { force: true })
    }
  })

  it('parses again when the kept copy is damaged, and keeps the new parse', () => {
    const text = yamlText()
    const kept = keptParse(text)
    try {
      parseDocument(text)
      writeFileSync(kept, '{"openapi": "3.1.0", "info": {"ti')
      expect(parseDocument(text)).toEqual(parse(text))
      expect(JSON.parse(readFileSync(kept, 'utf8'))).toEqual(parse(text))
    } finally {
      rmSync(kept, { force: true })
    }
  })

  it('reads JSON as it is, keeping nothing', () => {
    const text = JSON.stringify(parse(yamlText()))
    expect(parseDocument(text)).toEqual(JSON.parse(text))
    expect(existsSync(keptParse(text))).toBe(false)
  })
})
