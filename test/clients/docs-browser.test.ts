/**
 * `/docs` in a real browser (Debian's chromium through playwright-core), with every request that leaves the loopback
 * interface aborted and recorded: the reference must render from this server alone.
 */
import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server.js'

const CHROMIUM = process.env.AGENTOPS_CHROMIUM ?? '/usr/bin/chromium'
// CI installs chromium (.ci/run); a machine without it skips here rather than fail for a missing binary.
const required = process.env.CI === 'true' || process.env.AGENTOPS_REQUIRE_BROWSER === '1'

describe.skipIf(!existsSync(CHROMIUM) && !required)(
  'the API reference at /docs, offline, in a browser',
  () => {
    let t: TestServer
    let browser: Browser
    beforeAll(async () => {
      t = await startTestServer()
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      })
    })
    afterAll(async () => {
      await browser?.close()
      await t?.close()
    })

    it('loads its script from the server, never from the network, lists the operations and shows a request example', async () => {
      const page = await browser.newPage()
      const offLoopback: string[] = []
      await page.route('**/*', (route) => {
        const url = new URL(route.request().url())
        if (url.protocol === 'data:' || url.protocol === 'blob:' || url.hostname === '127.0.0.1')
          return route.continue()
        offLoopback.push(route.request().url())
        return route.abort('internetdisconnected')
      })
      const pageErrors: string[] = []
      page.on('pageerror', (error) => pageErrors.push(error.message))

      const response = await page.goto(`${t.baseUrl}/docs`, { waitUntil: 'load', timeout: 30_000 })
      expect(response?.status()).toBe(200)
      const html = await response?.text()
      expect(html).toContain('src="/docs/scalar.js"')
      expect(html).not.toMatch(/cdn\.jsdelivr|unpkg\.com|fonts\.scalar/)

      // Operations are listed by their summaries (the first tag group open, the others as groups) once the bundle
      // has rendered the document.
      await page.getByText('Start a run').first().waitFor({ timeout: 30_000 })
      const text = await page.locator('body').innerText()
      for (const entry of [
        'Inspect a run',
        "Read a run's trace",
        "Stream a run's trace",
        'Tools',
        'Agents',
        'Tasks',
      ])
        expect(text).toContain(entry)
      // The operation bodies (with their paths) render after the sidebar: wait for one rather than snapshot early.
      await page.getByText('/v1/agents/{agent_id}/runs').first().waitFor({ timeout: 30_000 })

      // A request example for an operation: the generated curl snippet, filled from the contract's examples.
      await page
        .getByText(/curl http:\/\/127\.0\.0\.1:8080\/v1\/agents\/agt_\w+\/runs/)
        .first()
        .waitFor({ timeout: 30_000 })
      const example = await page.locator('body').innerText()
      expect(example).toMatch(/--request POST[\s\S]*"mode": "live"/)

      expect(offLoopback, 'requests that left the machine').toEqual([])
      expect(pageErrors).toEqual([])
      await page.close()
    }, 90_000)
  },
)
