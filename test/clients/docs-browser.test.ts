/**
 * `/docs` in a real browser (Debian's chromium through playwright-core), with every request that leaves the loopback
 * interface aborted and recorded: the reference must render from this server alone, target the server that served
 * it, and offer nothing that needs the internet.
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
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, not a DOM property: the text as rendered (hidden elements left out) is what a reader sees
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

      // The server in the samples is the one that served the page (not the contract's default port), and the
      // request example is the contract's complete, valid one.
      const samples = page.getByText(
        new RegExp(`curl ${t.baseUrl.replace(/[.]/g, '\\.')}/v1/agents/agt_\\w+/runs`),
      )
      await samples.first().waitFor({ timeout: 30_000 })
      // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, the rendered text (as above)
      const example = await page.locator('body').innerText()
      expect(example).toMatch(/--request POST[\s\S]*"mode": "live"/)
      expect(example).toMatch(/"policy_envelope": "default"/)
      expect(example).not.toMatch(/127\.0\.0\.1:8080/)

      // One "Webhooks" entry in the sidebar: the tag is shown as "Webhook subscriptions".
      const sidebar = page.locator('aside.t-doc__sidebar').first()
      expect(await sidebar.getByText('Webhooks', { exact: true }).count()).toBe(1)
      expect(await sidebar.getByText('Webhook subscriptions', { exact: true }).count()).toBe(1)

      // Nothing on the page needs the internet: no visible link to another origin, no "Open API Client", no
      // developer toolbar (Developer Tools, Configure, Share, Deploy).
      const external: string[] = []
      const anchors = page.locator('a[href]')
      for (let i = 0, n = await anchors.count(); i < n; i++) {
        const anchor = anchors.nth(i)
        const href = new URL((await anchor.getAttribute('href')) ?? '', t.baseUrl)
        if (href.origin !== new URL(t.baseUrl).origin && (await anchor.isVisible())) external.push(href.href)
      }
      expect(external, 'visible links that leave the server').toEqual([])
      expect(await page.getByText('Open API Client').count()).toBe(0)
      for (const name of ['Developer Tools', 'Configure', 'Share', 'Deploy'])
        expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0)

      expect(offLoopback, 'requests that left the machine').toEqual([])
      expect(pageErrors).toEqual([])
      await page.close()
    }, 90_000)
  },
)
