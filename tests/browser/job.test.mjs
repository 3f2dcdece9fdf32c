// Browser test of a finished job's page (issue 31): playwright-core drives Debian's chromium against
// a live ktuned measuring on its cpu device. A small kernel is registered over HTTP (POST
// /v1/kernels) whose U = 3 configurations do not compile (an #error: the compile log) and whose
// U = 5 configurations compute a wrong answer (a verification error, extras.max_abs_err); an
// exhaustive job of 12 evaluations (of its 14 configurations, the default among them) with a final
// pick of 3 candidates × 3 rounds and a seed above 2^53 sent as text, then a job on a problem the
// kernel refuses (every trial invalid: the job fails). The job page must show:
// - the final pick: its candidates and rounds in a table and a chart, and a sentence on why the
//   answer is what it is;
// - the convergence chart's x axis ending at the budget (12), not at 12 + the 9 re-measurements;
// - a compile_error trial's log one click away (its row's button), and a wrong_result trial's
//   max |error|;
// - GFLOP/s (the best's and a table column) and the speed-up over the kernel's default;
// - the seed exactly as sent (9007199254740993 = 2^53 + 1: a JavaScript number would show ...992);
// - the failed job's reason in words in a banner, not a JSON blob.
// No console errors, nothing loaded from outside; screenshots at desktop and phone widths
// (job-final-*.png, job-log-*.png, job-failed-*.png).
//
// Environment: KTUNE_KTUNED (the ktuned binary), KTUNE_SOURCE_DIR (the repository),
// KTUNE_ARTIFACTS (screenshots; default <tmp>/ktune-browser-artifacts).

import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Ktuned, launchBrowser, watchPage, closePage } from "./fixture.mjs";

const KTUNED = process.env.KTUNE_KTUNED;
const SOURCE = process.env.KTUNE_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const ARTIFACTS = process.env.KTUNE_ARTIFACTS || path.join(os.tmpdir(), "ktune-browser-artifacts");
const VIEWPORTS = { desktop: { width: 1366, height: 900 }, phone: { width: 390, height: 844 } };
const BUDGET = 12, COUNT = 3, ROUNDS = 3;
const SEED = "9007199254740993"; // 2^53 + 1: not a double
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const SPEC = {
  name: "scale31",
  summary: "y = 3*x; U = 3 does not compile, U = 5 is wrong (a test kernel)",
  problem: [{ name: "n", min: 1, max: 1 << 22, default: 65536 }],
  buffers: [
    { name: "x", elements: "n", role: "input" },
    { name: "y", elements: "n", role: "output" },
  ],
  flops: "n",
  tolerance: { rtol: 1e-6, atol: 1e-7 },
  reference: { kind: "c", source: "reference.c" },
  variants: {
    cpu: {
      source: "cpu.c",
      parameters: [
        { name: "U", values: [1, 2, 3, 4, 5, 6, 8] },
        { name: "W", values: [0, 1] },
      ],
      restrictions: [],
      default: { U: 1, W: 0 },
    },
  },
  test_problem: { n: 1024 },
};
const CPU = `#if U == 3
#error "U = 3 is not supported by scale31 (the compile log the dashboard shows)"
#endif
int ktune_kernel(float *const *b, const long long *p);
int ktune_kernel(float *const *b, const long long *p)
{
    long long i = 0, n = p[0];
    if (n > (1 << 21))
        return 1; /* refused: the failed job */
    for (; i + U <= n; i += U)
        for (int u = 0; u < U; u++)
            b[1][i + u] = 3.0f * b[0][i + u] + (U == 5 ? 0.5f : 0.0f) + (W ? 0.0f : 0.0f);
    for (; i < n; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
`;
const REFERENCE = `int ktune_reference(float *const *b, const long long *p);
int ktune_reference(float *const *b, const long long *p)
{
    for (long long i = 0; i < p[0]; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
`;

describe("job page", { timeout: 600000 }, () => {
  let k, browser, job, failed;

  async function newPage(viewport = VIEWPORTS.desktop) {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    return watchPage(page, k.base);
  }

  before(async () => {
    assert.ok(KTUNED, "KTUNE_KTUNED must name the ktuned binary");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    k = new Ktuned(KTUNED, SOURCE, { extra: ["--workers", "1", "--min-seconds", "0.01"] });
    await k.start();
    browser = await launchBrowser();
    const made = await k.api("POST", "/v1/kernels", { spec: SPEC, files: { "cpu.c": CPU, "reference.c": REFERENCE } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    for (let until = Date.now() + 120000; Date.now() < until; await sleep(200)) {
      const v = (await k.api("GET", "/v1/kernels/" + SPEC.name)).body.versions.find((x) => x.version === made.body.version);
      if (v.status !== "validating") {
        assert.equal(v.status, "ready", JSON.stringify(v));
        break;
      }
    }
    const tune = (problem, extra) => k.api("POST", "/v1/tune", { kernel: SPEC.name, device: "cpu", problem, strategy: "exhaustive", history: "none", ...extra });
    const r = await tune({ n: 65536 }, { budget: { evaluations: BUDGET }, seed: SEED, final_remeasure: COUNT, final_rounds: ROUNDS });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const f = await tune({ n: 1 << 22 }, { budget: { evaluations: 2 } });
    assert.equal(f.status, 202, JSON.stringify(f.body));
    job = await k.waitJob(r.body.id, { timeoutMs: 300000 });
    assert.equal(job.status, "succeeded", JSON.stringify(job));
    assert.equal(job.final_pick.state, "picked", JSON.stringify(job.final_pick));
    failed = await k.waitJob(f.body.id, { timeoutMs: 120000 });
    assert.deepEqual([failed.status, failed.stop_reason], ["failed", "no_ok_trial"], JSON.stringify(failed));
  });

  after(async () => {
    if (browser) await browser.close();
    if (k) {
      const rc = await k.stop().catch((e) => e.message);
      k.cleanup();
      assert.equal(rc, 0, "ktuned exited with " + rc + " on SIGTERM");
    }
  });

  it("shows the final pick, the search apart from it, GFLOP/s, the speed-up and the seed", async () => {
    // What the API says the page must show.
    assert.equal(job.seed, SEED, "the seed comes back as the text sent");
    const trials = (await k.api("GET", `/v1/jobs/${job.id}/trials?limit=1000`)).body.trials;
    assert.equal(trials.filter((t) => t.final_round === null).length, BUDGET);
    assert.equal(trials.filter((t) => t.final_round !== null).length, COUNT * ROUNDS);
    assert.ok(trials.some((t) => t.status === "compile_error" && /U = 3 is not supported/.test(t.extras.log || "")), "a compile log stored");
    assert.ok(trials.some((t) => t.status === "wrong_result" && t.extras.max_abs_err > 0), "a verification error stored");
    for (const [name, viewport] of Object.entries(VIEWPORTS)) {
      const page = await newPage(viewport);
      await page.goto(`${k.base}/#/jobs/${job.id}`);
      await page.waitForSelector('#job-page[data-loaded="all"]');
      // The final pick: its candidates with their rounds, and why.
      assert.equal(await page.locator("#final-table tbody tr").count(), COUNT);
      const winnerRow = page.locator(`#final-table tbody tr[data-candidate="${job.final_pick.winner}"]`);
      assert.match(await winnerRow.textContent(), /final answer/);
      const why = await page.locator("#final-why").textContent();
      assert.match(why, job.final_pick.winner === 0 ? /also the final answer/ : /differs from the search's best/);
      assert.match(await page.locator("#best-source").textContent(), new RegExp(`median of ${ROUNDS} re-measurements`));
      const rounds = await page.evaluate(() => window.Chart.getChart(document.getElementById("final-chart")).data.datasets.map((d) => d.data.length));
      assert.deepEqual(rounds, Array(COUNT).fill(ROUNDS + 1), "each candidate: its search time, then each round");
      // The search curve ends at the budget: the re-measurements are not evaluations.
      const axis = await page.evaluate(() => {
        const c = window.Chart.getChart(document.getElementById("convergence-chart"));
        return { max: c.scales.x.max, xs: c.data.datasets.flatMap((d) => d.data.map((p) => p.x)) };
      });
      assert.equal(axis.max, BUDGET);
      assert.ok(Math.max(...axis.xs) <= BUDGET, "no point past the budget: " + axis.xs);
      assert.equal(await page.locator("#trials-table tbody tr .final-round").count(), COUNT * ROUNDS);
      // GFLOP/s and the speed-up over the default (U=1, W=0: measured by this exhaustive job).
      const gflops = Number((await page.locator("#best-gflops").textContent()).replace(/,/g, ""));
      assert.ok(gflops > 0, "best GFLOP/s: " + gflops);
      // Beside it, its share of the device's peak where GET /v1/devices knows the peak, else
      // "peak unknown" in words (a host without cpufreq: no frequency, no peak; issue 31).
      const cpu = (await k.api("GET", "/v1/devices")).body.devices.find((d) => d.name === "cpu");
      await page.waitForFunction(() => document.querySelector("#best-peak")?.dataset.peak);
      const share = await page.locator("#best-peak").textContent();
      if (cpu.peak_gflops === null) assert.equal(share, "(peak unknown)");
      else assert.ok(Math.abs(parseFloat(share.slice(1)) - (100 * gflops) / cpu.peak_gflops) < 0.05 * (100 * gflops) / cpu.peak_gflops, share);
      assert.ok((await page.locator("#trials-table thead").textContent()).includes("GFLOP/s"));
      assert.match(await page.locator("#speedup").textContent(), /^\d+\.\d\d× (faster|slower) \(default /);
      // The seed, unrounded.
      assert.equal(await page.locator("#job-seed").textContent(), SEED);
      await page.screenshot({ path: path.join(ARTIFACTS, `job-final-${name}.png`), fullPage: true });
      // One click from a compile_error row to its log; one from a wrong_result row to its error.
      await page.locator("#trials-table tbody tr", { hasText: "compile_error" }).first().locator(".details-button").click();
      await page.waitForSelector("#trial-log");
      assert.match(await page.locator("#trial-log").textContent(), /U = 3 is not supported/);
      assert.match(await page.locator("#trial-details").textContent(), /the compiler refused this configuration/);
      await page.locator("#trial-details").screenshot({ path: path.join(ARTIFACTS, `job-log-${name}.png`) });
      await page.locator("#trials-table tbody tr", { hasText: "wrong_result" }).first().locator(".details-button").click();
      await page.waitForSelector("#trial-max-err");
      assert.ok(Number(await page.locator("#trial-max-err td").textContent()) > 0);
      await page.click("#close-details");
      assert.equal(await page.locator("#trial-details").isHidden(), true);
      await closePage(page);
    }
  });

  it("says why a failed job failed, in words", async () => {
    for (const [name, viewport] of Object.entries(VIEWPORTS)) {
      const page = await newPage(viewport);
      await page.goto(`${k.base}/#/jobs/${failed.id}`);
      await page.waitForSelector('#job-page[data-loaded="all"]');
      const box = await page.locator("#job-failure").textContent();
      assert.match(box, /This job failed: no configuration ran correctly/);
      assert.ok(box.includes(failed.error.message), box);
      assert.ok(!box.includes('{"code"'), "no JSON blob: " + box);
      assert.equal(await page.locator("#final-pick").isHidden(), true, "a job without a final pick has no card");
      await page.screenshot({ path: path.join(ARTIFACTS, `job-failed-${name}.png`), fullPage: true });
      await closePage(page);
    }
  });
});
