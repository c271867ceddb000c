"""The same questions under two entailment backends (judges): do the methods' AUROCs, their ordering and the
paired comparisons survive a change of judge? Built for the results page's judge-robustness table."""
