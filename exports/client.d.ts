export * from 'agentops-client'
