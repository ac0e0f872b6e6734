// The dashboard's own behaviour, kept out of the templates so that the Content-Security-Policy can
// refuse every inline script: a form with data-confirm asks first, a select with data-autosubmit
// submits its form when it changes.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form.dataset && form.dataset.confirm;
  if (question && !window.confirm(question)) {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);

document.addEventListener("change", (event) => {
  const field = event.target;
  if (field.matches && field.matches("[data-autosubmit]") && field.form) {
    field.form.requestSubmit ? field.form.requestSubmit() : field.form.submit();
  }
});
