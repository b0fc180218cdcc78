#!/usr/bin/env node
// The suite is its own package (conformance/, the agentops-conformance workspace); this forwards to its bin.
import '../conformance/bin/agentops-conformance.mjs'
