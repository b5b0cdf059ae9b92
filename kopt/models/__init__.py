"""Trained models: the model files (:mod:`.model`), their checks on load (:mod:`.checks`), the built-in predictor
kinds (:mod:`.predictors`) and ``kopt predict``'s scoring of a data file (:mod:`.predict_file`)."""
