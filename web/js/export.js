// Export buttons (issue 31): each downloads a file the server makes — GET /v1/best?...&format=header
// or flags for a lookup, GET /v1/jobs/{id}/export?format=header|flags|kerneltuner for a job — the
// same text `ktune best --format` and `ktune export` write (one renderer, in the server; the page
// renders nothing itself). The last download's name and bytes are kept on the group's element
// (data-last-file, data-last-bytes) for the browser test.
//
// Call order: put exportButtons(...) where the buttons go; a click fetches and saves.

import { getFile } from "./api.js";
import { h, clear, errorBox } from "./dom.js";

const LABELS = { header: "C header", flags: "compiler flags", kerneltuner: "Kernel Tuner cache" };

// formats: e.g. ["header", "flags"]; pathOf(format) gives the request path; name: the file name
// when the server gives none.
export function exportButtons(formats, pathOf, { id, name = "ktune" } = {}) {
  const msg = h("span", { class: "export-msg" });
  const el = h("div", { class: "export-buttons", id: id || null }, h("span", { class: "label" }, "Export"));
  for (const f of formats) {
    el.append(
      h("button", {
        type: "button",
        class: "small",
        "data-format": f,
        title: `download ${LABELS[f] || f} as the server writes it`,
        onclick: async (e) => {
          const b = e.currentTarget;
          b.disabled = true;
          clear(msg);
          try {
            const file = await getFile(pathOf(f));
            const blob = new Blob([file.text], { type: file.type });
            const a = h("a", { href: URL.createObjectURL(blob), download: file.filename || `${name}.${f === "header" ? "h" : f === "flags" ? "txt" : "json"}` });
            document.body.append(a);
            a.click();
            a.remove();
            setTimeout(() => URL.revokeObjectURL(a.href), 10000);
            el.dataset.lastFile = a.download;
            el.dataset.lastBytes = String(file.text.length);
          } catch (err) {
            clear(msg, errorBox(err));
          } finally {
            b.disabled = false;
          }
        },
      }, LABELS[f] || f)
    );
  }
  el.append(msg);
  return el;
}
