// The only script: selecting a filter value submits its form, so filtering needs no extra click.
document.addEventListener("change", (event) => {
  const field = event.target;
  if (field.matches("form.filters select, form.filters input[type=checkbox]")) {
    field.form.requestSubmit();
  }
});
