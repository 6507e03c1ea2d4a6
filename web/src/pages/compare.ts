document.getElementById('app')!.textContent = 'compare';
