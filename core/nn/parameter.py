class Parameter: pass
