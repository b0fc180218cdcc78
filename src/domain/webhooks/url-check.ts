import { ApiError } from '../errors.js'
import type { OutboundHttp } from '../outbound.js'

function invalidUrl(message: string): ApiError {
  return new ApiError('invalid_request', message, {
    issues: [{ path: 'url', message }],
    fields: ['url'],
  })
}

/**
 * The checks a subscription URL passes at creation: absolute http(s), no credentials, and nothing the outbound
 * port would never call (a literal private address, `localhost`). Names are checked again at every delivery,
 * after DNS resolution, because what a name resolves to can change.
 */
export function checkWebhookUrl(raw: string, outbound: Pick<OutboundHttp, 'refusal'>): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalidUrl('url must be an absolute http or https URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalidUrl('url must use http or https')
  if (url.username !== '' || url.password !== '') throw invalidUrl('url must not carry credentials')
  if (url.hostname === '') throw invalidUrl('url must name a host')
  const refusal = outbound.refusal(url)
  if (refusal) throw invalidUrl(`url ${refusal}`)
  return url
}
