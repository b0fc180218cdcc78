// The kit's `agentops-contract-kit/client`: the agentops-client workspace's build, re-exported from inside the kit
// (its tarball ships client/dist), so installing the kit needs no agentops-client package from a registry.
export * from '../client/dist/src/index.js'
