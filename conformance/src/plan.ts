/**
 * `--plan`: what a run would do, told before it sends anything but the reachability probe (the preflight's one read
 * per token). Each check's needs are read from what it uses (a token role, the webhook receiver, the declared
 * GraphQL surface); a check whose need is missing would skip, and the plan names the setting that provides it.
 */
import { type Check, family } from './check.js'
import { type SuiteConfig, settingName, TOKENS, type TokenKey, tokenName } from './config.js'

export type PlannedOutcome = 'run' | 'skip' | 'not applicable'

export interface PlanEntry {
  id: string
  level: Check['level']
  outcome: PlannedOutcome
  /** For a skip or a check that does not apply: the setting that would run it. */
  setting?: string
}

/** The token roles, the receiver and the GraphQL surface a check uses, from its code and its family's helpers. */
export function needsOf(check: Check): { tokens: TokenKey[]; receiver: boolean; graphql: boolean } {
  const source = check.run.toString()
  const roles = new Set<TokenKey>(check.needs ?? [])
  // `ctx.as(role)` skips without the token; reading `tokens.x` alone is an optional use (the check runs without).
  for (const m of source.matchAll(/\bas\(\s*['"](\w+)['"]\s*\)|tokenName\(\s*['"](\w+)['"]\s*\)/g)) {
    const role = (m[1] ?? m[2]) as TokenKey
    if (role in TOKENS && role !== 'primary') roles.add(role)
  }
  const fam = family(check.id)
  return {
    tokens: [...roles],
    // Every webhook check subscribes the receiver through its family's helper (receiverUrl).
    receiver: fam === 'webhooks' || /\bctx\.receiver\b|\breceiverUrl\(/.test(source),
    graphql: /\bdeclaredSurface\(/.test(source),
  }
}

export function planFor(checks: Check[], config: SuiteConfig): PlanEntry[] {
  return checks.map((check) => {
    const needs = needsOf(check)
    if (needs.graphql && !config.graphqlUrl)
      return {
        id: check.id,
        level: check.level,
        outcome: 'not applicable',
        setting: `${settingName('graphql-url')} (graphqlUrl in --config), if the deployment has a GraphQL surface`,
      }
    const missing = needs.tokens.find((role) => !config.tokens[role])
    if (missing)
      return {
        id: check.id,
        level: check.level,
        outcome: 'skip',
        setting: `${tokenName(missing)}, or ${settingName('provision')}`,
      }
    if (needs.receiver && !config.receiver.url)
      return { id: check.id, level: check.level, outcome: 'skip', setting: settingName('receiver-url') }
    return { id: check.id, level: check.level, outcome: 'run' }
  })
}

/** The plan as printed: one line a check, the skips and the checks that do not apply with their setting. */
export function formatPlan(entries: PlanEntry[], config: SuiteConfig): string[] {
  const mark = { run: 'RUN ', skip: 'SKIP', 'not applicable': 'N/A ' } as const
  const lines = entries.map(
    (e) =>
      `${mark[e.outcome]} ${e.level.padEnd(7)} ${e.id.padEnd(48)}${e.setting ? ` → ${e.outcome === 'skip' ? 'needs' : 'declare'} ${e.setting}` : ''}`,
  )
  const count = (level: string, outcome: PlannedOutcome) =>
    entries.filter((e) => e.level === level && e.outcome === outcome).length
  const receiver = config.receiver.url ?? ''
  const loopbackReceiver = /^https?:\/\/(127\.|localhost|\[::1\])/.test(receiver)
  const loopbackTarget = /^https?:\/\/(127\.|localhost|\[::1\])/.test(config.baseUrl)
  if (receiver && loopbackReceiver && !loopbackTarget)
    lines.push(
      `note: the webhook receiver is ${receiver}, which a deployment on another machine cannot reach → set ${settingName('receiver-url')} (and --receiver-host 0.0.0.0 --receiver-port N)`,
    )
  lines.push(
    `plan: core ${count('core', 'run')} will run, ${count('core', 'skip')} will be skipped, ${count('core', 'not applicable')} do not apply; profile ${count('profile', 'run')} will run, ${count('profile', 'skip')} will be skipped, ${count('profile', 'not applicable')} do not apply (nothing was sent but the reachability probe)`,
  )
  return lines
}
