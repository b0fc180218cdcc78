/**
 * The one setting that addresses a failed or skipped check, for the end of its console line and its reports: the
 * suite's own setting when its message names one (a token, a wait, the receiver, a declaration in --config), the
 * receiver's URL when the deployment refused it before the run, else the deployment itself, at the spec
 * statements the check verifies.
 */
import { SETTINGS, settingName } from './config.js'
import type { CheckResult } from './types.js'
import { settingsNamed } from './verdict.js'

/** What the run learnt before the checks that explains failures: the deployment refused the receiver's URL. */
export interface RunFindings {
  receiverRefused?: string
}

const isFlag = (name: string) => SETTINGS.some((s) => `--${s.flag}` === name)

export function fixFor(
  r: Pick<CheckResult, 'outcome' | 'message' | 'clauses' | 'exchanges' | 'notApplicable'>,
  findings: RunFindings = {},
): string | undefined {
  if (r.outcome === 'pass') return undefined
  const message = r.message ?? ''
  // The deployment refused the receiver's URL: the webhook checks fail for that, whatever they say.
  const touchesWebhooks =
    /webhook|deliver|receiver/i.test(message) ||
    r.exchanges.some((x) => /\/v1\/webhooks(\/|$|\?)/.test(x.url) && (x.status ?? 0) >= 400)
  if (findings.receiverRefused && touchesWebhooks)
    return `${settingName('receiver-url')}: a URL the deployment accepts and reaches (it refused ${findings.receiverRefused})`
  // The first setting the message names: a flag with its variable, a config key as written.
  const named =
    settingsNamed(message).find((s) => s !== '--config' && s !== '--list') ?? settingsNamed(message)[0]
  if (named) return isFlag(named) ? settingName(named.slice(2)) : named
  if (r.outcome === 'skip' && r.notApplicable) return 'nothing: the deployment does not declare this surface'
  return `the deployment (spec ${r.clauses.join(', ')})`
}
