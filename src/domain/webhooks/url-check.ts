import { ApiError } from '../errors.js'
import type { OutboundHttp } from '../outbound.js'

function invalidUrl(message: string, field: string): ApiError {
  return new ApiError('invalid_request', message, {
    issues: [{ path: field, message }],
    fields: [field],
  })
}

/**
 * The checks a subscription URL passes at creation: absolute http(s), no credentials, and nothing the outbound
 * port would never call (a literal private address, `localhost`). Names are checked again at every delivery,
 * after DNS resolution, because what a name resolves to can change.
 */
export function checkWebhookUrl(raw: string, outbound: Pick<OutboundHttp, 'refusal'>, field = 'url'): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalidUrl(`${field} must be an absolute http or https URL`, field)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalidUrl(`${field} must use http or https`, field)
  if (url.username !== '' || url.password !== '')
    throw invalidUrl(`${field} must not carry credentials`, field)
  // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable: the URL parser refuses an http or https URL without a host.
  if (url.hostname === '') throw invalidUrl(`${field} must name a host`, field)
  const refusal = outbound.refusal(url)
  if (refusal) throw invalidUrl(`${field} ${refusal}`, field)
  return url
}
