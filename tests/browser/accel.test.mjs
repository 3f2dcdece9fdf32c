// Browser test of a Mind Mappings job on the analytical accelerator (issue 13): a live ktuned with
// the accel devices file, a small `surrogate` model of cnn_layer on accel:mindmap trained through
// POST /v1/models until ready, then a `mindmap` job on the ResNet Conv_3 preset through POST
// /v1/tune until it succeeds. The dashboard must show it like any job:
// - #/models lists the surrogate (kind, algorithm, key) and its detail page its training metrics;
// - #/jobs/{id} draws every trial, the convergence chart's best-so-far line is non-increasing and
//   ends at the job's best, and the objective is labelled as what it is on an accel device
//   (EDP over its algorithmic minimum, "×"), not as milliseconds;
// - #/jobs lists the job with its best as a ratio;
// - no console errors, nothing loaded from outside; screenshots accel-*.png.
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
const DEVICE = "accel:mindmap";
const BUDGET = 120;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("accel: a mindmap job in the dashboard", { timeout: 600000 }, () => {
  let k, browser, model, job;

  async function newPage() {
    const ctx = await browser.newContext({ viewport: { width: 1366, height: 900 } });
    const page = await ctx.newPage();
    return watchPage(page, k.base);
  }

  before(async () => {
    assert.ok(KTUNED, "KTUNE_KTUNED must name the ktuned binary");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    k = new Ktuned(KTUNED, SOURCE, { extra: ["--workers", "1", "--accel-devices", path.join(SOURCE, "accel", "devices.json")] });
    await k.start();
    // Without a surrogate the strategy is refused, with the way out in the hint.
    const tune = { kernel: "cnn_layer", device: DEVICE, problem: { preset: "resnet_conv3" }, strategy: "mindmap", budget: { evaluations: BUDGET }, seed: 7 };
    const refused = await k.api("POST", "/v1/tune", tune);
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "no_model");
    assert.match(refused.body.error.hint, /\/v1\/models/);
    const r = await k.api("POST", "/v1/models", { kind: "surrogate", kernel: "cnn_layer", device: DEVICE, hyper: { samples: 3000, problems: 30, epochs: 6, hidden: [64, 64], seed: 1 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    model = r.body;
    const deadline = Date.now() + 240000;
    while (model.status === "training" && Date.now() < deadline) {
      await sleep(250);
      model = (await k.api("GET", `/v1/models/${model.id}`)).body;
    }
    assert.equal(model.status, "ready", JSON.stringify(model));
    const t = await k.api("POST", "/v1/tune", tune);
    assert.equal(t.status, 202, JSON.stringify(t.body));
    job = await k.waitJob(t.body.id, { timeoutMs: 240000 });
    assert.equal(job.status, "succeeded", JSON.stringify(job));
    assert.ok(job.best.time_ms >= 1, "EDP over its minimum is at least 1: " + job.best.time_ms);
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (k) {
      const rc = await k.stop().catch((e) => e.message);
      k.cleanup();
      assert.equal(rc, 0, "ktuned exited with " + rc + " on SIGTERM");
    }
  });

  it("lists the surrogate in GET /v1/models and on the Models page", async () => {
    const list = (await k.api("GET", "/v1/models")).body;
    const items = Array.isArray(list) ? list : list.items || list.models;
    const mine = items.find((m) => m.id === model.id);
    assert.ok(mine, "the surrogate is listed: " + JSON.stringify(list).slice(0, 400));
    assert.equal(mine.kind, "surrogate");
    assert.equal(mine.status, "ready");
    const page = await newPage();
    await page.goto(`${k.base}/#/models`);
    const row = page.locator(`#models-table tr[data-model="${model.id}"]`);
    await row.waitFor();
    const text = (await row.textContent()) || "";
    assert.match(text, /cnn_layer/);
    assert.match(text, /ready/);
    await page.screenshot({ path: path.join(ARTIFACTS, "accel-models.png"), fullPage: true });
    await closePage(page);
  });

  it("shows the job's convergence with the accel objective", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs/${job.id}`);
    await page.waitForSelector('#job-page[data-loaded="all"]', { timeout: 60000 });
    const chart = await page.evaluate(() => {
      const c = window.Chart.getChart(document.getElementById("convergence-chart"));
      return { title: c.options.scales.y.title.text, best: c.data.datasets[0].data.map((p) => p.y) };
    });
    assert.equal(chart.title, "EDP / minimum EDP");
    assert.ok(chart.best.length >= 2, "the best-so-far line has points: " + chart.best.length);
    for (let i = 1; i < chart.best.length; i++) assert.ok(chart.best[i] <= chart.best[i - 1], "best so far never rises");
    assert.ok(Math.abs(chart.best[chart.best.length - 1] - job.best.time_ms) <= 1e-9 * job.best.time_ms, `the line ends at the job's best ${job.best.time_ms}`);
    const body = (await page.textContent("body")) || "";
    assert.match(body, /mindmap/);
    assert.match(body, /×/);
    // The best as a ratio, as the dashboard writes one (4 significant digits and "×", dom.js fmtRatio).
    const ratio = String(Number(job.best.time_ms.toPrecision(4))) + "×";
    assert.equal((await page.textContent("#best-time")) || "", ratio);
    await page.screenshot({ path: path.join(ARTIFACTS, "accel-job.png"), fullPage: true });
    await page.goto(`${k.base}/#/jobs`);
    const cell = page.locator(`#jobs-table tr[data-id="${job.id}"] td[data-col="best"]`);
    await cell.waitFor();
    assert.equal(await cell.textContent(), ratio, "the jobs list shows the best as a ratio");
    await page.screenshot({ path: path.join(ARTIFACTS, "accel-jobs.png"), fullPage: true });
    await closePage(page);
  });
});
