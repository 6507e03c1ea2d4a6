document.getElementById('app')!.textContent = 'report';
