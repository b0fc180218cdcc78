import { describe, expect, it } from 'vitest'
import { checkWebhookUrl } from '../../src/domain/webhooks/url-check.js'
import { createOutboundHttp } from '../../src/outbound/http.js'

const strict = createOutboundHttp({ allowPrivate: false })
const open = createOutboundHttp({ allowPrivate: true })

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
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
  ])('refuses the non-public %s unless private targets are allowed', (url) => {
    expect(() => checkWebhookUrl(url, strict)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
    expect(() => checkWebhookUrl(url, open)).not.toThrow()
  })
})
