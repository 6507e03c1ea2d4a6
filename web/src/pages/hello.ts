// Smallest page: proves the bundle pipeline end to end (used by the report crate's tests).
const el = document.getElementById('app');
if (el) el.textContent = 'keisoku';
