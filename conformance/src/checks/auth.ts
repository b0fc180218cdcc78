/** Spec §5 authentication: 401 without a valid bearer token. */
import type { Check, CheckContext } from '../check.js'
import { TOKENS, tokenName } from '../config.js'
import type { HttpResponse } from '../http.js'
import { assert, skip } from '../types.js'
import { short, sleep } from '../wait.js'
import { expectError } from './assertions.js'

/** A read every implementation serves (spec §4 lists tools); the agent list is a profile extension. */
const PROBE = '/v1/tools?limit=1'

/** How long auth.refused-secret-leaves-the-key leaves its key alone first: past the reference's 1 s key cache. */
const KEY_CACHE_FORGOTTEN_MS = 1500

/**
 * `token` with its character at `i` changed: the deployment's own token form, and no key of its (whatever the format).
 */
function alteredAt(token: string, i: number, [a, b] = ['Q', 'R']): string {
  return `${token.slice(0, i)}${token[i] === a ? b : a}${token.slice(i + 1)}`
}

/**
 * The expired token's answer once it is refused: a token made to expire a second after it was issued may still be
 * valid when the run starts, so while it is accepted it is asked again a few times (bounded).
 */
async function expiredAnswer(ctx: CheckContext): Promise<HttpResponse> {
  const expired = ctx.as('expired')
  let res = await expired.get(PROBE)
  for (let i = 0; i < 8 && res.status >= 200 && res.status < 300; i++) {
    await sleep(400)
    res = await expired.get(PROBE)
  }
  return res
}

export const authChecks: Check[] = [
  {
    id: 'auth.missing-token-401',
    title: 'A request without Authorization is refused with 401 and the error envelope',
    level: 'core',
    clauses: ['S4.1', 'S5.2', 'S7.4'],
    async run(ctx) {
      for (const [method, path, body] of [
        ['GET', PROBE, undefined],
        ['POST', '/v1/agents', { name: ctx.name('unauth'), behavior: 'autonomous' }],
        ['GET', '/v1/runs/run_doesnotexist', undefined],
      ] as const) {
        const res = await ctx.http.request(method, path, { token: null, ...(body ? { body } : {}) })
        expectError(res, 401, `${method} ${path} without a token`)
      }
    },
  },
  {
    id: 'auth.malformed-token-401',
    title: 'Malformed Authorization headers and unknown tokens are refused with 401',
    level: 'core',
    clauses: ['S5.1', 'S5.2'],
    async run(ctx) {
      const token = ctx.config.tokens.primary
      const variants: Record<string, string> = {
        'empty bearer': 'Bearer ',
        'basic scheme': 'Basic dXNlcjpwYXNz',
        'garbage token': 'Bearer not-a-real-token',
        'token without scheme': token,
        'altered token': `Bearer ${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`,
        'token altered near its start': `Bearer ${alteredAt(token, Math.min(6, token.length - 1))}`,
        'token altered in the middle': `Bearer ${alteredAt(token, Math.floor(token.length / 2))}`,
        // A digit where a letter was (or another digit): a token of the usual alphabets' form that names no key.
        'token altered near its start by a digit': `Bearer ${alteredAt(token, Math.min(6, token.length - 1), ['7', '8'])}`,
        'token with a character added at its start': `Bearer Q${token}`,
        'token with a character added at its end': `Bearer ${token}Q`,
        // RFC 6750 §2.1: the credentials are "Bearer" 1*SP b64token, one token and nothing after it.
        'token followed by more text': `Bearer ${token} extra`,
        'a scheme that only ends in Bearer': `XBearer ${token}`,
      }
      // The expired and revoked tokens altered in their middle, sent before either token itself (the auth checks
      // run first, and the preflight leaves both out): a deployment that remembers the secret a key was first
      // presented with, right or wrong, then refuses them for the wrong reason (auth.refusal-reason).
      for (const role of ['expired', 'revoked'] as const) {
        const other = ctx.config.tokens[role]
        if (other)
          variants[`the ${TOKENS[role].what} altered in the middle`] =
            `Bearer ${alteredAt(other, Math.floor(other.length / 2))}`
      }
      for (const [what, header] of Object.entries(variants)) {
        // Twice: a deployment may answer a token it has not seen from the store and again from memory.
        for (const time of ['', ', again']) {
          const res = await ctx.http.get(PROBE, { token: null, headers: { authorization: header } })
          expectError(res, 401, `${what}${time}`)
        }
      }
    },
  },
  {
    id: 'auth.refused-secret-leaves-the-key',
    title:
      "A key's token with a wrong secret, refused, changes nothing for the key: its own token is still taken, the wrong one still refused",
    level: 'core',
    clauses: ['S5.1', 'S5.2'],
    // It waits first (below), on a key the next checks do not use: runs alongside them.
    overlap: true,
    async run(ctx) {
      // §5: an invalid token is refused 401 and a valid one is not; one refusal cannot change which is which. A key
      // the run barely uses (a tier's, which only the tier checks use, near the run's end), left alone long enough
      // for a cache of verified keys that lives about a second (the reference's) to forget it: a deployment that
      // remembered the first secret a freshly read key was shown, right or wrong, then refuses the key's own token.
      // Not the revocable key: a run revokes it, so a config used twice holds a revoked one.
      const { tokens } = ctx.config
      const token = tokens.proTier ?? tokens.standardTier ?? tokens.primary
      await sleep(KEY_CACHE_FORGOTTEN_MS)
      // The last character: a token's secret part, whatever comes before it (an id that locates the key).
      const wrong = alteredAt(token, token.length - 1)
      expectError(await ctx.http.get(PROBE, { token: wrong }), 401, 'a token with its last character changed')
      const own = await ctx.http.get(PROBE, { token })
      assert(
        own.status !== 401,
        `after a wrong secret for the key was refused, the key's own token was refused too (401): ${short(own.body)}`,
      )
      expectError(
        await ctx.http.get(PROBE, { token: wrong }),
        401,
        "the token with its last character changed, after the key's own",
      )
    },
  },
  {
    id: 'auth.expired-token-401',
    title: 'An expired token is refused with 401',
    level: 'core',
    clauses: ['S5.2', 'S7.4'],
    // It may wait for the token's expiry, on an identity of its own: runs alongside the next checks.
    overlap: true,
    async run(ctx) {
      if (!ctx.config.tokens.expired) skip(`no ${tokenName('expired')} given`)
      expectError(await expiredAnswer(ctx), 401, 'expired token')
    },
  },
  {
    id: 'auth.revoked-token-401',
    title: 'A revoked token is refused with 401 and the error envelope',
    level: 'profile',
    clauses: ['S5.2'],
    needs: ['revoked'],
    async run(ctx) {
      // §5 names a missing or expired token's 401 and leaves "How keys are issued and rotated: not shown"; the
      // reference answers a key its operator revoked as one that expired, 401.
      if (!ctx.config.tokens.revoked) skip(`no ${tokenName('revoked')} given`)
      // Twice: a deployment may answer a key it has not seen from the store and again from memory.
      for (const time of ['', ', again'])
        expectError(await ctx.as('revoked').get(PROBE), 401, `the revoked token${time}`)
    },
  },
  {
    id: 'auth.valid-token-accepted',
    title: 'The primary token is accepted on every resource family',
    level: 'core',
    clauses: ['S1.1', 'S1.9', 'S5.1', 'S9.1'],
    async run(ctx) {
      const agent = await ctx.fx.agent()
      for (const path of [`/v1/agents/${agent}`, '/v1/tools?limit=1']) {
        const res = await ctx.http.get(path)
        assert(res.status === 200, `GET ${path} with the primary token answered ${res.status}`)
      }
    },
  },
  {
    id: 'auth.bearer-forms',
    title:
      'The valid token is accepted in the other forms RFC 6750 and RFC 7235 allow: the scheme in lower case, more than one space',
    level: 'profile',
    clauses: ['S5.1'],
    async run(ctx) {
      // §5 writes the header as `Authorization: Bearer <API_KEY>` and names no grammar; the reference reads it as
      // RFC 6750 §2.1 defines it ("Bearer" 1*SP b64token), with the scheme case-insensitive (RFC 7235 §2.1).
      const token = ctx.config.tokens.primary
      for (const [what, header] of [
        ['the scheme in lower case', `bearer ${token}`],
        ['two spaces after the scheme', `Bearer  ${token}`],
      ] as const) {
        const res = await ctx.http.get(PROBE, { headers: { authorization: header } })
        assert(res.status === 200, `the primary token with ${what} answered ${res.status}, not 200`)
      }
    },
  },
  {
    id: 'auth.www-authenticate',
    title: '401 answers carry WWW-Authenticate: Bearer (invalid_token when a token was sent)',
    level: 'profile',
    clauses: ['S5.2'],
    async run(ctx) {
      const missing = await ctx.http.get(PROBE, { token: null })
      const challenge = missing.headers['www-authenticate'] ?? ''
      assert(/^Bearer/i.test(challenge), 'no WWW-Authenticate: Bearer on a 401 without a token')
      // RFC 6750 §3.1: a request that lacks any authentication information gets no error code in the challenge.
      assert(
        !/error=/i.test(challenge),
        `WWW-Authenticate names an error for a request without a token: ${challenge}`,
      )
      const bad = await ctx.http.get(PROBE, { token: 'nope' })
      assert(
        /invalid_token/.test(bad.headers['www-authenticate'] ?? ''),
        `WWW-Authenticate lacks error="invalid_token" for a bad token: ${bad.headers['www-authenticate']}`,
      )
      // What this check names is the header; the error code is §7's gap ("Error codes other than policy_denied:
      // not shown"), so only the status is held here.
      expectError(bad, 401, 'bad token')
    },
  },
  {
    id: 'auth.refusal-reason',
    title:
      "A 401's detail.reason says why the token was refused (missing, malformed, unknown, expired, revoked)",
    level: 'profile',
    clauses: ['S5.2', 'S7.1'],
    async run(ctx) {
      // §7 makes error.detail "Context" and names no field for a 401; the reference's contract documents
      // detail.reason, so a client can tell "send a token" from "this token is no longer good".
      const primary = ctx.config.tokens.primary
      // The primary token with one character of its middle changed.
      const altered = alteredAt(primary, Math.floor(primary.length / 2))
      const cases: [string, string | null, Record<string, string>, string][] = [
        ['no token', null, {}, 'missing'],
        ['another scheme', null, { authorization: 'Basic dXNlcjpwYXNz' }, 'malformed'],
        // An Authorization header with nothing in it carries no credentials, as one that is absent.
        ['an empty Authorization header', null, { authorization: '' }, 'missing'],
        ['the primary token with one character changed', altered, {}, 'unknown'],
      ]
      const asked: [string, string, () => Promise<HttpResponse>][] = cases.map(
        ([what, token, headers, reason]) => [what, reason, () => ctx.http.get(PROBE, { token, headers })],
      )
      // The expired and revoked tokens, when given: refused for what they are.
      if (ctx.config.tokens.expired) asked.push(['the expired token', 'expired', () => expiredAnswer(ctx)])
      // Read from tokens, not `ctx.as`: the revoked token is an optional use here (--plan reads `as(...)` as a need).
      const revoked = ctx.config.tokens.revoked
      if (revoked) asked.push(['the revoked token', 'revoked', () => ctx.http.get(PROBE, { token: revoked })])
      for (const [what, reason, ask] of asked) {
        const res = await ask()
        const error = expectError(res, 401, what)
        const detail = error.detail as Record<string, unknown>
        assert(
          detail.reason === reason,
          `${what}: detail.reason is ${String(detail.reason)}, not "${reason}"`,
        )
      }
    },
  },
]
