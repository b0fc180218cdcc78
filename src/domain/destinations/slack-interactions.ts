import type { Clock } from '../clock.js'
import { ApiError } from '../errors.js'
import { asObject, asText } from './json-values.js'
import type { DestinationRepository, SeenSignatures } from './ports.js'
import { SLACK_SIGNATURE_TOLERANCE_MS, verifySlackSignature } from './slack-signature.js'

/** The action ids of the Approve and Deny buttons (src/outbound/destinations/slack-message.ts draws them). */
export const APPROVE_ACTION = 'agentops_approve'
export const DENY_ACTION = 'agentops_deny'

/** Who clicked, as Slack says in the signed payload. */
export interface SlackActor {
  userId: string
  userName: string
  teamId: string | null
}

/** Tells Slack what happened, through the interaction's `response_url`. Never throws. */
export interface SlackResponder {
  /** Replaces the approval message with the same message, buttons gone, saying who decided. */
  decided(
    responseUrl: string,
    original: Record<string, unknown> | null,
    decision: 'approve' | 'reject',
    actor: SlackActor,
    at: number,
  ): Promise<void>
  /** Shows only the clicker why nothing changed (already decided, not found). */
  refused(responseUrl: string, text: string): Promise<void>
}

export interface InteractionLog {
  info(fields: Record<string, unknown>, message: string): void
  warn(fields: Record<string, unknown>, message: string): void
}

export interface SlackInteractionPorts {
  destinations: Pick<DestinationRepository, 'byId'>
  signatures: SeenSignatures
  runs: {
    decide(
      workspaceId: string,
      runId: string,
      stepId: string,
      decision: 'approve' | 'reject',
      identity: string,
      comment?: string,
    ): Promise<unknown>
  }
  responder: SlackResponder
  clock: Clock
  log: InteractionLog
}

/** The headers Slack signs a request with. */
export interface SlackSignatureHeaders {
  timestamp: string | undefined
  signature: string | undefined
}

/**
 * How long a click's signature is remembered: twice the timestamp tolerance, since a click may be signed up to the
 * tolerance ahead of the clock and is then still fresh that long after it was first seen.
 */
const REMEMBERED_MS = 2 * SLACK_SIGNATURE_TOLERANCE_MS

const refused = () =>
  new ApiError('unauthenticated', 'The Slack request signature does not verify', { scheme: 'slack-v0' })

/**
 * The Approve and Deny buttons of Slack approval messages. Slack posts each click, signed with the app's signing
 * secret, to the destination's interaction URL; a verified click decides the step in the destination's workspace
 * with the Slack user as the approver, then the message is replaced to say who decided. Anything forged, stale
 * (more than five minutes off), replayed (to whichever replica) or about a run of another workspace changes nothing
 * and is logged.
 */
export class SlackInteractionService {
  constructor(private readonly ports: SlackInteractionPorts) {}

  /** Throws `unauthenticated` (401) for anything not signed by the destination's secret right now. */
  async handle(destinationId: string, headers: SlackSignatureHeaders, body: string): Promise<void> {
    const { log, clock } = this.ports
    const now = clock.now()
    const destination = await this.ports.destinations.byId(destinationId)
    const secret = destination?.type === 'slack' ? destination.secrets.signing_secret : undefined
    if (!destination || !secret) {
      log.warn(
        { destination_id: destinationId, reason: 'no slack destination with a signing secret' },
        'slack interaction refused',
      )
      throw refused()
    }
    const verdict = verifySlackSignature(secret, headers.timestamp, headers.signature, body, now)
    if (verdict !== 'valid') {
      log.warn({ destination_id: destinationId, reason: verdict }, 'slack interaction refused')
      throw refused()
    }
    if (!(await this.ports.signatures.firstSeen(String(headers.signature), now, REMEMBERED_MS))) {
      log.warn({ destination_id: destinationId, reason: 'replayed' }, 'slack interaction refused')
      throw refused()
    }
    let payload: Record<string, unknown>
    try {
      payload = asObject(JSON.parse(new URLSearchParams(body).get('payload') ?? ''))
    } catch {
      log.warn({ destination_id: destinationId, reason: 'no JSON payload' }, 'slack interaction ignored')
      return
    }
    const action = (Array.isArray(payload.actions) ? payload.actions : [])
      .map(asObject)
      .find((a) => a.action_id === APPROVE_ACTION || a.action_id === DENY_ACTION)
    const responseUrl = asText(payload.response_url)
    const user = asObject(payload.user)
    const userId = asText(user.id)
    if (payload.type !== 'block_actions' || !action || !userId) {
      log.info({ destination_id: destinationId, type: payload.type }, 'slack interaction ignored')
      return
    }
    let target: Record<string, unknown>
    try {
      target = asObject(JSON.parse(String(action.value)))
    } catch {
      target = {}
    }
    const runId = asText(target.run_id)
    const stepId = asText(target.step_id)
    const actor: SlackActor = {
      userId,
      userName: asText(user.username) ?? asText(user.name) ?? userId,
      teamId: asText(asObject(payload.team).id),
    }
    const decision = action.action_id === APPROVE_ACTION ? 'approve' : 'reject'
    const where = {
      destination_id: destinationId,
      workspace_id: destination.workspaceId,
      run_id: runId,
      step_id: stepId,
      slack_user: userId,
    }
    if (!runId || !stepId) {
      log.warn({ ...where, reason: 'no run or step in the button' }, 'slack interaction ignored')
      return
    }
    try {
      await this.ports.runs.decide(
        destination.workspaceId,
        runId,
        stepId,
        decision,
        `slack:${actor.teamId ? `${actor.teamId}/` : ''}${userId}`,
        `${decision === 'approve' ? 'approved' : 'denied'} in Slack by ${actor.userName}`,
      )
    } catch (err) {
      if (!(err instanceof ApiError) || (err.code !== 'not_found' && err.code !== 'invalid_state')) throw err
      // not_found: the run is not in the destination's workspace (or does not exist); invalid_state: decided already.
      log.warn({ ...where, reason: err.code }, 'slack interaction changed nothing')
      if (responseUrl)
        void this.ports.responder.refused(
          responseUrl,
          err.code === 'invalid_state'
            ? `Nothing changed: step ${stepId} of run ${runId} is no longer waiting for approval.`
            : `Nothing changed: run ${runId} is not one this destination's workspace can decide.`,
        )
      return
    }
    log.info({ ...where, decision }, 'slack interaction decided an approval')
    if (responseUrl)
      void this.ports.responder.decided(responseUrl, asObject(payload.message), decision, actor, now)
  }
}
