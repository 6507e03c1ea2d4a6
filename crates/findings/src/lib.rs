//! Rules that turn a stored run into findings with evidence.
