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

// A button with data-copy="#id" copies that element's text, and then reads its data-done label.
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.textContent.trim();
  const done = () => { if (button.dataset.done) button.textContent = button.dataset.done; };
  const selectAndCopy = () => {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    if (document.execCommand("copy")) done();
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, selectAndCopy);
  } else {
    selectAndCopy();
  }
});
