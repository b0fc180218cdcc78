/**
 * The annotations audited (audit-annotations.mjs): a `// Stryker disable` comment takes its mutants out of the run, its
 * reason saying why no correct check could kill them. The audit runs those mutants with the comments made plain ones,
 * and reports the ones the suite kills: a reason that claims too much, or the other variant of a mutator whose
 * equivalent variant on the same line the comment is for (a comment names mutators, not variants). These are the pure
 * parts of it, over Stryker's JSON reports (mutation-testing-report-schema).
 */
import { IGNORER_REASONS } from './ignorers.mjs'
import { DETECTED, mutantKey, rangesWhere } from './stores.mjs'

/** Whether a report's mutant was annotated by a comment (not by an ignorer plugin: a class of mutants, not a claim). */
export function annotatedByComment(mutant) {
  return mutant.status === 'Ignored' && !IGNORER_REASONS.has(mutant.statusReason ?? '')
}

/**
 * `text` with every Stryker directive made a plain comment of the same length (`Stryker disable` becomes `Stryked
 * disable`): every line and column stays where it was, so a report's places still name the same code.
 */
export function neutralized(text) {
  return text.replace(/\bStryker (disable|restore)\b/g, 'Stryked $1')
}

/**
 * Stryker `--mutate` ranges (stores.mjs rangesWhere) of the mutants `report` annotated by comment, in `files` only
 * when given (the files whose sources are the report's).
 */
export function annotatedRanges(report, files) {
  return rangesWhere(report, (file, m) => (!files || files.has(file)) && annotatedByComment(m))
}

/**
 * What the audit found: each mutant `original` annotated by comment that `audited` (the run without the comments)
 * detected, with the comment's reason, what killed it and whether a variant of the same mutator on the same line
 * (another annotated mutant there) escaped the suite: then the comment is for that one. Counts alongside.
 */
export function auditFindings(original, audited) {
  const judged = new Map()
  for (const [file, { mutants }] of Object.entries(audited.files))
    for (const m of mutants) judged.set(mutantKey(file, m), m)
  /** file:line:mutator -> whether a variant there escaped the suite */
  const escapedAt = new Map()
  const found = []
  let annotated = 0
  let judgedCount = 0
  for (const [file, { mutants }] of Object.entries(original.files))
    for (const m of mutants) {
      if (!annotatedByComment(m)) continue
      annotated++
      const twin = judged.get(mutantKey(file, m))
      if (!twin) continue
      judgedCount++
      const line = `${file}:${m.location.start.line}:${m.mutatorName}`
      const detected = DETECTED.has(twin.status)
      escapedAt.set(line, (escapedAt.get(line) ?? false) || !detected)
      if (detected)
        found.push({
          file,
          line: m.location.start.line,
          mutator: m.mutatorName,
          replacement: m.replacement,
          reason: m.statusReason ?? '',
          status: twin.status,
          killedBy: twin.statusReason ?? '',
          group: line,
        })
    }
  const killed = found.map(({ group, ...f }) => ({ ...f, besideAnEscapedVariant: escapedAt.get(group) }))
  return {
    annotated,
    judged: judgedCount,
    killed,
    killedWhole: killed.filter((k) => !k.besideAnEscapedVariant).length,
    killedBesideAnEscapedVariant: killed.filter((k) => k.besideAnEscapedVariant).length,
  }
}
