// placeholder: replaced by the declaration parser
