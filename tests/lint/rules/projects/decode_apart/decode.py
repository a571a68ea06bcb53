"""Round twenty-five's development part (pointer_summarizer's decode.py): a beam search whose beams
hold the decoder's log-probabilities, returned to a caller that writes the words to files. Nothing in
this file, or in what calls it, trains: the graph autograd records is never used."""
import json

from model import load


class Beam:
    def __init__(self, tokens, log_probs):
        self.tokens, self.log_probs = tokens, log_probs

    def extend(self, token, log_prob):
        return Beam(self.tokens + [token], self.log_probs + [log_prob])

    @property
    def avg_log_prob(self):
        return sum(self.log_probs) / len(self.tokens)


class BeamSearch:
    def __init__(self, path):
        self.model = load(path)

    def beam_search(self, batch):  # error: PIT201
        out, _ = self.model.encoder(batch)
        beams = [Beam([0], [0.0])]
        for step in range(out.shape[1]):
            log_probs = self.model.decoder(out[:, step]).log_softmax(-1)
            top, ids = log_probs.topk(2, -1)
            beams = [b.extend(token=ids[0, k].item(), log_prob=top[0, k]) for b in beams for k in range(2)]
            beams = self.sort_beams(beams)[:2]
        return beams[0]

    def sort_beams(self, beams):
        return sorted(beams, key=lambda b: b.avg_log_prob, reverse=True)

    def decode(self, batches):
        results = []
        for batch in batches:
            best = self.beam_search(batch)
            results.append(best.tokens)
        with open("decoded.json", "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    BeamSearch("model.pt").decode([])
