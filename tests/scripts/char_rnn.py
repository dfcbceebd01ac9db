"""PyTorch's "NLP From Scratch: Classifying Names with a Character-Level RNN" tutorial, in its
current form: names as one-hot ``(len, 1, n_letters)`` tensors, ``nn.RNN`` → Linear →
LogSoftmax, ``random_split`` with a seeded ``torch.Generator``, batches of names of random
lengths whose NLL losses are summed before one ``backward``, ``clip_grad_norm_``, SGD. The
names are made up (a seeded ``random.Random`` per language) instead of the data download;
default initialisation under ``torch.manual_seed(0)``: funcgrad reproduces PyTorch's random
stream. Each step's batch mixes other lengths: the recurrent stack's backward runs once per
length (``Op.fuse``), not as a new program per step."""

import random
import string
import time

import numpy as np
from _common import torch

nn = torch.nn
t0 = time.perf_counter()
torch.manual_seed(0)
random.seed(0)

allowed_characters = string.ascii_letters + " .,;'" + "_"
n_letters = len(allowed_characters)


def letterToIndex(letter):
    if letter not in allowed_characters:
        return allowed_characters.find("_")
    return allowed_characters.find(letter)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


print(f"The name 'Ahn' becomes {lineToTensor('Ahn').nonzero().tolist()}")

LETTERS = {"Arabic": "aeiklmnrsh", "Chinese": "ahinogzuw", "Czech": "cikorsvz", "Dutch": "aeijknrstv",
           "English": "adehlmnorst", "French": "aeilnoru"}


class NamesDataset(torch.utils.data.Dataset):
    def __init__(self, per_language=24):
        rng = random.Random(1)
        self.data, self.data_tensors, self.labels, self.labels_tensors = [], [], [], []
        for label, letters in LETTERS.items():
            for _ in range(per_language):
                name = "".join(rng.choice(letters) for _ in range(rng.randint(3, 8))).capitalize()
                self.data.append(name)
                self.data_tensors.append(lineToTensor(name))
                self.labels.append(label)
        self.labels_uniq = sorted(set(self.labels))
        for label in self.labels:
            self.labels_tensors.append(torch.tensor([self.labels_uniq.index(label)], dtype=torch.long))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return self.labels_tensors[idx], self.data_tensors[idx], self.labels[idx], self.data[idx]


alldata = NamesDataset()
print(f"loaded {len(alldata)} items of data; example = {alldata[0][2:]}")
train_set, test_set = torch.utils.data.random_split(alldata, [.85, .15],
                                                    generator=torch.Generator().manual_seed(2024))
print(f"train examples = {len(train_set)}, validation examples = {len(test_set)}")
print("first train indices", train_set.indices[:8])


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)
        return output


rnn = CharRNN(n_letters, 64, len(alldata.labels_uniq))
print(rnn)


def label_from_output(output, output_labels):
    top_n, top_i = output.topk(1)
    label_i = top_i[0].item()
    return output_labels[label_i], label_i


output = rnn(lineToTensor("Albert"))
print(output)
print(label_from_output(output, alldata.labels_uniq))


def train(rnn, training_data, n_epoch=4, n_batch_size=16, learning_rate=0.15, criterion=nn.NLLLoss()):
    all_losses = []
    rnn.train()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
    for iter in range(1, n_epoch + 1):
        rnn.zero_grad()
        current_loss = 0
        batches = list(range(len(training_data)))
        random.shuffle(batches)
        batches = np.array_split(batches, len(batches) // n_batch_size)
        for batch in batches:
            batch_loss = 0
            for i in batch:
                (label_tensor, text_tensor, label, text) = training_data[i]
                output = rnn.forward(text_tensor)
                loss = criterion(output, label_tensor)
                batch_loss += loss
            batch_loss.backward()
            nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()
            optimizer.zero_grad()
            current_loss += batch_loss.item() / len(batch)
        all_losses.append(current_loss / len(batches))
        print(f"{iter} ({iter / n_epoch:.0%}): \t average batch loss = {all_losses[-1]:.6f}")
    return all_losses


train(rnn, train_set)

confusion = torch.zeros(len(alldata.labels_uniq), len(alldata.labels_uniq))
rnn.eval()
with torch.no_grad():
    for i in range(len(test_set)):
        (label_tensor, text_tensor, label, text) = test_set[i]
        guess, guess_i = label_from_output(rnn(text_tensor), alldata.labels_uniq)
        confusion[alldata.labels_uniq.index(label)][guess_i] += 1
print(confusion)
print(f"wall {time.perf_counter() - t0:.1f} s")
