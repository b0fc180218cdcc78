import { describe, expect, it } from 'vitest'
import { sendWebhook } from '../../src/domain/webhooks/sender.js'
import { checkWebhookUrl, isNonPublicAddress } from '../../src/domain/webhooks/url-guard.js'
import { startReceiver } from './receiver.js'

describe('webhook URL checks', () => {
  it.each([
    'ftp://example.com/hook',
    'javascript:alert(1)',
    'file:///etc/passwd',
    'https://user:pass@example.com/hook',
    'https://user@example.com/hook',
    'not a url',
  ])('refuses %s with invalid_request', (url) => {
    expect(() => checkWebhookUrl(url, true)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
  })

  it('accepts public http and https URLs', () => {
    expect(checkWebhookUrl('https://hooks.example.com/x?y=1', false).host).toBe('hooks.example.com')
    expect(checkWebhookUrl('http://93.184.216.34:8080/', false).port).toBe('8080')
  })

  it.each([
    'http://127.0.0.1:9/',
    'http://localhost/',
    'http://api.localhost/',
    'http://10.1.2.3/',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://0.0.0.0/',
    'http://[fe80::1]/',
  ])('refuses the non-public %s unless private targets are allowed', (url) => {
    expect(() => checkWebhookUrl(url, false)).toThrow(expect.objectContaining({ code: 'invalid_request' }))
    expect(() => checkWebhookUrl(url, true)).not.toThrow()
  })

  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.1.1',
      '0.0.0.0',
      '::',
      '::1',
    ])
      expect(isNonPublicAddress(a), a).toBe(true)
    for (const a of ['fd00::1', 'fe80::1', '100.64.0.1', '::ffff:10.0.0.1'])
      expect(isNonPublicAddress(a), a).toBe(true)
    for (const a of ['8.8.8.8', '93.184.216.34', '2606:4700::1111', '172.32.0.1'])
      expect(isNonPublicAddress(a), a).toBe(false)
  })

  it('refuses at connect time a name that resolves to loopback, and sends when private targets are allowed', async () => {
    const receiver = await startReceiver()
    try {
      const port = new URL(receiver.url).port
      const refused = await sendWebhook(`http://localhost:${port}/hook`, {}, '{}', {
        timeoutMs: 2_000,
        allowPrivate: false,
      })
      expect(refused.ok).toBe(false)
      expect(refused.error).toMatch(/non-public address/)
      const literal = await sendWebhook(receiver.url, {}, '{}', { timeoutMs: 2_000, allowPrivate: false })
      expect(literal.error).toMatch(/non-public address 127\.0\.0\.1/)
      expect(receiver.received).toHaveLength(0)
      const allowed = await sendWebhook(receiver.url, {}, '{}', { timeoutMs: 2_000, allowPrivate: true })
      expect(allowed).toEqual({ ok: true, statusCode: 200, error: null })
      expect(receiver.received).toHaveLength(1)
    } finally {
      await receiver.close()
    }
  })
})
