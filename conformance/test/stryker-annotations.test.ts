/**
 * `conformance:stryker:audit`: the copy it judges keeps every place of the report (its comments made plain ones of the
 * same length), it asks for exactly the mutants annotated by comment, and it tells a kill whose whole mutator on the
 * line falls from one beside a variant that escapes (the one the comment is for).
 */
import { Instrumenter } from '@stryker-mutator/instrumenter'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain ESM modules of the command, without types
import { annotatedByComment, annotatedRanges, auditFindings, neutralized } from '../stryker/annotations.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { quiet } from '../stryker/changes.mjs'
// @ts-expect-error: plain ESM modules of the command, without types
import { IGNORER_REASONS } from '../stryker/ignorers.mjs'
import type { Report, ReportMutant } from './stryker-report.js'

const FILE = 'src/sample.ts'
const SOURCE = [
  'export function f(a: number) {',
  '  // Stryker disable next-line ConditionalExpression: the false variant is equivalent, a is never 3 here',
  '  if (a === 3) return 1',
  '  return 2',
  '}',
  '',
].join('\n')

const at = (line: number, column: number, endColumn: number) => ({
  start: { line, column },
  end: { line, column: endColumn },
})

function mutant(
  id: string,
  mutatorName: string,
  replacement: string,
  status: string,
  reason?: string,
): ReportMutant {
  return {
    id,
    mutatorName,
    replacement,
    status,
    ...(reason === undefined ? {} : { statusReason: reason }),
    location: at(3, 7, 14),
  }
}

const reportOf = (mutants: ReportMutant[]): Report => ({
  files: { [FILE]: { language: 'typescript', source: SOURCE, mutants } },
})

describe('the annotations audited', () => {
  it('makes every directive a plain comment of the same length, so every place stays where it was', async () => {
    const plain = neutralized(SOURCE)
    expect(plain).not.toMatch(/Stryker disable/)
    expect(plain.split('\n').map((l: string) => l.length)).toEqual(SOURCE.split('\n').map((l) => l.length))
    expect(neutralized('// Stryker restore all')).toBe('// Stryked restore all')
    // Stryker's own instrumenter: the comment annotates the line's ConditionalExpression mutants; the plain one does not.
    const ignored = async (text: string) => {
      const { mutants } = await new Instrumenter(quiet).instrument(
        [{ name: FILE, content: text, mutate: true }],
        {
          plugins: null,
          excludedMutations: [],
          ignorers: [],
          noHeader: true,
        },
      )
      return mutants.filter((m) => m.status === 'Ignored').length
    }
    expect(await ignored(SOURCE)).toBeGreaterThan(0)
    expect(await ignored(plain)).toBe(0)
  })

  it('asks for the mutants annotated by a comment only, in Stryker’s columns', () => {
    const ignorerReason = [...(IGNORER_REASONS as Set<string>)][0]
    const report = reportOf([
      mutant('1', 'ConditionalExpression', 'true', 'Ignored', 'the false variant is equivalent'),
      mutant('2', 'StringLiteral', '""', 'Ignored', ignorerReason),
      mutant('3', 'EqualityOperator', 'a !== 3', 'Killed'),
    ])
    expect(report.files[FILE]?.mutants.map(annotatedByComment)).toEqual([true, false, false])
    expect(annotatedRanges(report)).toEqual([`${FILE}:3:6-3:13`])
    expect(annotatedRanges(report, new Set(['src/other.ts']))).toEqual([])
  })

  it('tells a kill of the whole mutator on the line from one beside a variant that escapes', () => {
    const reason = 'the false variant is equivalent'
    const original = reportOf([
      mutant('1', 'ConditionalExpression', 'true', 'Ignored', reason),
      mutant('2', 'ConditionalExpression', 'false', 'Ignored', reason),
      { ...mutant('3', 'StringLiteral', '""', 'Ignored', 'words'), location: at(4, 10, 12) },
      mutant('4', 'EqualityOperator', 'a !== 3', 'Killed'),
    ])
    const audited = reportOf([
      mutant('10', 'ConditionalExpression', 'true', 'Killed', 'core runs.start-201-fields'),
      mutant('11', 'ConditionalExpression', 'false', 'Survived'),
      { ...mutant('12', 'StringLiteral', '""', 'Timeout'), location: at(4, 10, 12) },
      mutant('13', 'EqualityOperator', 'a !== 3', 'Killed'),
    ])
    const found = auditFindings(original, audited)
    expect(found.annotated).toBe(3)
    expect(found.judged).toBe(3)
    expect(
      found.killed.map((k: { replacement: string; besideAnEscapedVariant: boolean; killedBy: string }) => [
        k.replacement,
        k.besideAnEscapedVariant,
        k.killedBy,
      ]),
    ).toEqual([
      ['true', true, 'core runs.start-201-fields'],
      ['""', false, ''],
    ])
    expect([found.killedWhole, found.killedBesideAnEscapedVariant]).toEqual([1, 1])
  })
})
