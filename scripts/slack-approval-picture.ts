// Draws the Slack approval message the server sends (its Block Kit JSON, from src/outbound/destinations/
// slack-message.ts) in a local page styled like Slack's message view, and screenshots it with Debian's chromium
// through playwright-core: docs/slack-approval.png. Nothing is loaded from the network: the page is set inline and
// every request it would make is aborted.
//   npx tsx scripts/slack-approval-picture.ts [out.png]
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { slackMessage } from '../src/outbound/destinations/slack-message.js'

const out = process.argv[2] ?? fileURLToPath(new URL('../docs/slack-approval.png', import.meta.url))
const CHROMIUM = process.env.AGENTOPS_CHROMIUM ?? '/usr/bin/chromium'

const payload = {
  id: 'evt_01m8k3jt46asvwtedhh0s04zna',
  event: 'run.awaiting_approval',
  ts: '2026-11-29T07:42:45.120Z',
  run_id: 'run_01m8k3j2p787zazm9w8genhsep',
  agent_id: 'agt_payments_eu',
  step_id: 'step_3',
  queue: 'finance',
  reason: 'Wire transfers above 10,000 EUR need a person',
  payload_preview: {
    tool: 'wire_transfer',
    input: '{"amount":25000,"currency":"EUR","to":"DE89 3704 0044 0532 0130 00","reference":"INV-2291"}',
    truncated: false,
  },
}
const message = slackMessage('run.awaiting_approval', payload, {
  publicUrl: 'https://agentops.example.com',
  approvalButtons: true,
})

/** Slack emoji short codes the message uses, as characters the machine's DejaVu fonts draw. */
const EMOJI: Record<string, string> = {
  ':raised_hand:': '☝',
  ':x:': '✖',
  ':no_entry:': '⛔',
  ':white_check_mark:': '✔',
  ':information_source:': 'ℹ',
}

const html = (text: string) =>
  text
    .replace(/&(?!amp;|lt;|gt;)/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')

/** Slack mrkdwn to HTML: the text is already escaped (&, <, >) as Slack requires, so links and marks are parsed. */
function mrkdwn(text: string): string {
  const parts = text.split(/```/)
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return `<pre>${part}</pre>`
      return (
        part
          .replace(/<(https?:[^|>]+)\|([^>]+)>/g, '<a href="#">$2</a>')
          .replace(/<@([A-Z0-9]+)>/g, '<span class="mention">@$1</span>')
          .replace(/`([^`]+)`/g, '<code>$1</code>')
          // Slack marks only at word boundaries: `step_3`, `run_01…` stay as they are.
          .replace(/(^|[\s(>])\*([^*\n]+)\*(?=$|[\s.,!?)<])/g, '$1<b>$2</b>')
          .replace(/(^|[\s(>])_([^_\n]+)_(?=$|[\s.,!?)<])/g, '$1<i>$2</i>')
          .replace(/:[a-z_]+:/g, (code) => EMOJI[code] ?? code)
          .replace(/\n/g, '<br>')
      )
    })
    .join('')
}

interface Text {
  type: string
  text: string
}
interface Block {
  type: string
  text?: Text
  fields?: Text[]
  elements?: { type: string; text?: Text | string; style?: string }[]
}

function block(b: Block): string {
  switch (b.type) {
    case 'header':
      return `<div class="header">${(b.text?.text ?? '').replace(/:[a-z_]+:/g, (c) => EMOJI[c] ?? c)}</div>`
    case 'section': {
      const fields = b.fields?.length
        ? `<div class="fields">${b.fields.map((f) => `<div>${mrkdwn(f.text)}</div>`).join('')}</div>`
        : ''
      return `<div class="section">${b.text ? `<div>${mrkdwn(b.text.text)}</div>` : ''}${fields}</div>`
    }
    case 'actions':
      return `<div class="actions">${(b.elements ?? [])
        .map(
          (e) =>
            `<button class="${e.style ?? ''}">${html(typeof e.text === 'object' ? e.text.text : '')}</button>`,
        )
        .join('')}</div>`
    case 'context':
      return `<div class="context">${(b.elements ?? [])
        .map((e) => mrkdwn(typeof e.text === 'string' ? e.text : (e.text?.text ?? '')))
        .join(' ')}</div>`
    default:
      return ''
  }
}

const blocks = (message.blocks ?? []) as Block[]
const page = `<!doctype html><html><head><meta charset="utf-8"><style>
  body { margin: 0; background: #fff; font: 15px/1.47 'DejaVu Sans', 'Liberation Sans', sans-serif; color: #1d1c1d; }
  .message { display: flex; gap: 8px; padding: 14px 20px; width: 680px; }
  .avatar { width: 36px; height: 36px; border-radius: 6px; background: #4a154b; color: #fff; font-weight: bold;
    display: flex; align-items: center; justify-content: center; flex: none; }
  .who b { font-weight: 900; } .who .app { background: #e8e8e8; color: #616061; font-size: 10px; padding: 1px 3px;
    border-radius: 2px; margin: 0 4px; } .who .time { color: #616061; font-size: 12px; }
  .header { font-size: 18px; font-weight: 900; margin: 6px 0 4px; }
  .section { margin: 4px 0 8px; } .fields { display: grid; grid-template-columns: 1fr 1fr; gap: 8px 16px; margin-top: 8px; }
  code { font: 12px 'DejaVu Sans Mono', monospace; color: #e01e5a; background: #f6f6f6; border: 1px solid #ddd;
    border-radius: 3px; padding: 1px 3px; }
  pre { font: 12px/1.5 'DejaVu Sans Mono', monospace; background: #f8f8f8; border: 1px solid #ddd; border-radius: 4px;
    padding: 8px; margin: 4px 0; white-space: pre-wrap; word-break: break-all; }
  a { color: #1264a3; text-decoration: none; } .mention { color: #1264a3; background: #e8f5fa; }
  .actions { display: flex; gap: 8px; margin: 8px 0; }
  button { font: bold 15px 'DejaVu Sans', sans-serif; padding: 0 14px; height: 36px; border-radius: 4px;
    border: 1px solid #ccc; background: #fff; color: #1d1c1d; }
  button.primary { background: #007a5a; border-color: #007a5a; color: #fff; }
  button.danger { background: #fff; border-color: #e01e5a; color: #e01e5a; }
  .context { color: #616061; font-size: 12px; margin-top: 4px; } .context code { font-size: 11px; }
</style></head><body><div class="message"><div class="avatar">AO</div><div>
  <div class="who"><b>agentops</b><span class="app">APP</span><span class="time">08:42</span></div>
  ${blocks.map(block).join('\n')}
</div></div></body></html>`

const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] })
try {
  const context = await browser.newContext({ viewport: { width: 720, height: 400 }, deviceScaleFactor: 2 })
  await context.route('**/*', (route) => route.abort())
  const tab = await context.newPage()
  await tab.setContent(page, { waitUntil: 'load' })
  const png = await tab.locator('.message').screenshot()
  writeFileSync(out, png)
  console.log(`${out}: ${png.length} bytes, ${blocks.length} blocks`)
} finally {
  await browser.close()
}
