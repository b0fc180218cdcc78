/**
 * The contract's response bodies, from the types generated out of openapi/agent-operations.yaml. Every other module
 * names them through these aliases, so a schema renamed in the contract is a one-line change here.
 */
import type { components } from '../../generated/types.js'

type Schemas = components['schemas']

export type AgentBody = Schemas['Agent']
export type TaskBody = Schemas['Task']
export type ToolBody = Schemas['Tool']
export type RunBody = Schemas['Run']
export type TraceFrameBody = Schemas['TraceFrame']
export type WebhookBody = Schemas['Webhook']
export type DeliveryBody = Schemas['Delivery']
export type ErrorBody = Schemas['ErrorResponse']
export type AgentPageBody = Schemas['AgentPage']
export type ToolPageBody = Schemas['ToolPage']
export type WebhookPageBody = Schemas['WebhookPage']
export type DeliveryPageBody = Schemas['DeliveryPage']
export type RecordPageBody = Schemas['RecordPage']
export type RunPageBody = Schemas['RunPage']
export type TracePageBody = Schemas['TracePage']
export type DestinationBody = Schemas['Destination']
export type DestinationPageBody = Schemas['DestinationPage']
export type DestinationDeliveryBody = Schemas['DestinationDelivery']
export type DestinationDeliveryPageBody = Schemas['DestinationDeliveryPage']
export type DestinationTestResultBody = Schemas['DestinationTestResult']

/** The kinds of message /v1/stream (and a GraphQL subscription) sends, and those a client sends (`x-websockets`). */
export type StreamServerKind = Schemas['StreamServerMessage']['type']
export type StreamClientKind = Schemas['StreamClientMessage']['type']

/** A message of /v1/stream: its kind is one the contract lists; its other fields are the kind's own. */
export type StreamServerMessage = { type: StreamServerKind } & Record<string, unknown>
