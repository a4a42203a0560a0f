// Selecting a filter value submits its form, so filtering needs no extra click.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field.matches("form.filters select, form.filters input[type=checkbox]")) {
    field.form.requestSubmit();
  }
});

// A running run's progress, refreshed from the JSON API without reloading; once it finishes the
// page reloads once to show its results.
const live = document.getElementById("live");
if (live) {
  const seconds = (value) => {
    const whole = Math.round(value), minutes = Math.floor(whole / 60);
    return minutes ? `${minutes}m ${String(whole % 60).padStart(2, "0")}s` : `${value.toFixed(1)}s`;
  };
  const refresh = async () => {
    try {
      const response = await fetch(live.dataset.api, {headers: {Accept: "application/json"}});
      if (!response.ok) return;
      const run = await response.json();
      if (!run.active) { window.location.reload(); return; }
      const p = run.progress || {};
      live.querySelector(".live-stage").textContent = p.stage || run.status;
      live.querySelector(".live-count").textContent = p.total ? `${p.done || 0}/${p.total} tests` : "";
      live.querySelector(".live-elapsed").textContent = p.elapsed !== undefined ? seconds(p.elapsed) : "";
      live.querySelector(".live-message").textContent = p.message || "";
    } catch (error) { /* the next tick tries again */ }
  };
  setInterval(refresh, 2000);
}

// Cancel and re-run: the write API with the token the reader types (never stored by the page).
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.matches("form.run-actions")) return;
  event.preventDefault();
  const output = form.querySelector(".action-result");
  const response = await fetch(event.submitter.formAction, {
    method: "POST", headers: {Authorization: `Bearer ${form.elements.token.value}`},
  });
  const body = await response.json().catch(() => ({}));
  if (response.ok && body.url) { window.location.href = `/runs/${body.id}`; return; }
  if (response.ok) { window.location.reload(); return; }
  output.textContent = (body.error && body.error.message) || `failed (${response.status})`;
});
