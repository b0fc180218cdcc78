export * from '../client/dist/src/index.js'
