import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    // nact schedules every message with setImmediate: fake timers must never fake it (architecture §4.1).
    fakeTimers: { toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] },
    pool: 'forks',
    // dist/ for the tests that run the bin or import the package as plain node does
    globalSetup: ['./test/support/build.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
})
