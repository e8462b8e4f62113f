// placeholder: replaced by the state store
