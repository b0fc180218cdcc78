import { describe, expect, it } from 'vitest'
import { checkWebhookUrl } from '../../src/domain/webhooks/url-check.js'
import { createOutboundHttp } from '../../src/outbound/http.js'
import { parsePrivateTargets, portOf } from '../../src/outbound/private-targets.js'
import { ANY_LOOPBACK_PORT } from '../support/private-targets.js'

const strict = createOutboundHttp()
const open = createOutboundHttp({ privateTargets: ANY_LOOPBACK_PORT })
/** A client whose private targets list exactly the host and port of `url`. */
const listing = (url: string) => {
  const u = new URL(url)
  return createOutboundHttp({
    privateTargets: parsePrivateTargets(`${u.host.replace(/:\d+$/, '')}:${portOf(u)}`, 'TEST'),
  })
}

describe('webhook URL checks', () => {
  it.each([
    'ftp://example.com/hook',
    'javascript:alert(1)',
    'file:///etc/passwd',
    'https://user:pass@example.com/hook',
    'https://user@example.com/hook',
    'not a url',
  ])('refuses %s with invalid_request', (url) => {
    expect(() => checkWebhookUrl(url, open)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
  })

  it('accepts public http and https URLs', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x?y=1', strict).host).toBe('hooks.example.com')
    expect(checkWebhookUrl('http://93.184.216.34:8080/', strict).port).toBe('8080')
  })

  it.each([
    'http://127.0.0.1:9/',
    'http://localhost/',
    'http://api.localhost/',
    'http://10.1.2.3/',
    'http://100.64.0.1/',
    'http://198.18.0.1/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'http://[fd00::1]/',
  ])('refuses the non-public %s unless its host:port is listed', (url) => {
    expect(() => checkWebhookUrl(url, strict)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
    expect(() => checkWebhookUrl(url, listing(url))).not.toThrow()
    expect(() =>
      checkWebhookUrl(url.replace(/\/$/, '').replace(/(:\d+)?\/?$/, ':1/'), listing(url)),
    ).toThrow()
  })

  it.each([
    'http://169.254.169.254/latest/meta-data',
    'http://[fe80::1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://100.100.100.200/',
  ])('refuses the link-local or metadata %s even when listed (and refuses to list it)', (url) => {
    expect(() => listing(url)).toThrow(/never allowed/)
    const everything = createOutboundHttp({ privateTargets: { allows: () => true } })
    expect(() => checkWebhookUrl(url, everything)).toThrow(
      expect.objectContaining({ code: 'invalid_request' }),
    )
  })
})
