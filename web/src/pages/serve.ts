document.getElementById('app')!.textContent = 'serve';
