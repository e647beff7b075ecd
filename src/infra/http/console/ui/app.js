// The console page's entry: a placeholder the front-end replaces; it shows who is signed in, if anyone.
const app = document.getElementById('app')
fetch('/console/api/me', { credentials: 'same-origin' }).then(async (res) => {
  if (app) app.textContent = res.ok ? `signed in as ${(await res.json()).pubkey}` : 'not signed in'
})
