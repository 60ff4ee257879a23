Bextj
locationd.binj
offset0j
length8p