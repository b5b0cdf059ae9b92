"""Files kopt writes and reads back: atomic writes (:mod:`.atomic`), an npz with its JSON manifest committed as one
set (:mod:`.sets`), and npz files checked member by member before they are loaded (:mod:`.npz`)."""
