// The kit's `agentops-contract-kit/client`: the agentops-client package, re-exported.
export * from 'agentops-client'
