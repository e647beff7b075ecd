import type { Reporter, TestModule } from 'vitest/node'

/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own summary: the
 * form CI reads to count what ran (vitest's table is not one of the formats it knows).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 }
    for (const m of testModules) {
      for (const t of m.children.allTests()) {
        const state = t.result().state
        if (state === 'passed') counts.passed++
        else if (state === 'failed') counts.failed++
        else counts.skipped++
      }
      // a file that failed to load has no tests to count, but is a failure all the same
      if (m.state() === 'failed' && [...m.children.allTests()].length === 0) counts.failed++
    }
    process.stdout.write(`\ntests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`)
  }
}
